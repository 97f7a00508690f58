"""Instructions a step executes, counted by valgrind: a figure that does not move with
the machine's weather, for judging changes of a few microseconds.

A chain of trivial tool.call steps runs in this process (the world on /dev/shm when it
exists); per step = (instructions of a HI-step run - those of a LO-step run) / (HI - LO),
so start-up, imports and the warm-up run cancel out. `PYTHONHASHSEED=0` keeps two runs of
one tree equal to the instruction, and the run's wall-clock timers are set too far off to
fire (under valgrind they would fire as often as the machine's load made them).
Caveat: under valgrind OpenSSL's SHA-256 runs without its CPU instructions (SHA-NI), so
hashing weighs about ten times its real share: judge a change to hashing with `timeit`
instead. `--tree DIR` measures another checkout (a git
worktree of a base commit, say) with this interpreter, for an A/B.

Run: .venv/bin/python bench/instructions.py [--mode process|strict] [--tree DIR ...]
Needs valgrind (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LO, HI = 50, 250


def child(tree: str, steps: int, mode: str) -> None:
    """One chain of `steps` steps after a 5-step warm-up, in `tree`'s lwtool."""
    sys.path[:0] = [tree, str(HERE)]
    from _generate import chain_lwir

    from lwtool.record import run_state
    from lwtool.runtime.interpreter import start_run
    from lwtool.tools import ToolRegistry
    from lwtool.world.local import LocalWorld

    # Under valgrind a step takes milliseconds: the wall-clock timers (a chain lets the
    # loop run every TURN_S; evidence is committed alone after NOTE_DELAY) would fire as
    # often as the machine's load makes them, and the count would move with it.
    run_state.TURN_S = run_state.NOTE_DELAY = 1e9

    async def echo(args: Any) -> Any:
        return {"value": str(args.get("value"))}

    registry = ToolRegistry()
    registry.register("echo", echo)
    where = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        warm = LocalWorld(Path(tmp) / "warm", durability=mode)
        asyncio.run(start_run(warm, chain_lwir(5, uses="tool.call"), {"seed": "x"}, registry,
                              {}))
        world = LocalWorld(Path(tmp) / "chain", durability=mode)
        asyncio.run(start_run(world, chain_lwir(steps, uses="tool.call"), {"seed": "x"},
                              registry, {}))


def count(tree: str, steps: int, mode: str) -> int:
    """Instructions of one child run under valgrind's callgrind."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", tree, str(steps), mode],
        capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="process", choices=("process", "strict"))
    parser.add_argument("--tree", action="append", help="a checkout to measure (default: "
                        "this one); repeat for an A/B")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    for tree in options.tree or [str(HERE.parent)]:
        per_step = (count(tree, HI, options.mode) - count(tree, LO, options.mode)) / (HI - LO)
        print(f"{tree}: {per_step / 1000:.1f}k instructions a step ({options.mode}, "
              f"in-process chain of tool.call steps)")


if __name__ == "__main__":
    main()

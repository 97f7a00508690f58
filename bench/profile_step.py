"""Where a step's time goes: a 200-step chain of trivial tool.call steps under cProfile.

Prints the functions with the most own time and the most cumulative time, per step
(microseconds), so a change to the step path shows up as a line that moved.

`--split` profiles nothing: it runs the chain in both durability modes, alternating,
and prints per step the time inside the world's BEGIN and COMMIT (the fsync in strict
mode) and the rest (lwtool's Python with the SQL statements between them); then process
mode again with the thread asleep for IDLE_US after each COMMIT, as it waits for the
fsync in strict mode (no disk). On the VMs measured the rest takes longer after a wait
(whether the idle vCPU halts or polls): that is the disk's price too, not only the
commit's.

Run: .venv/bin/python bench/profile_step.py [--steps N] [--durability strict|process]
     [--top N] [--split [--reps N]]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402
from _timed_world import TimedWorld  # noqa: E402

from lwtool.runtime.interpreter import start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402


async def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


IDLE_US = 200  # about a FULL commit on the VMs measured
VARIANTS = ("process", "strict", "process+idle")


def split(steps: int, reps: int, folder: str, registry: ToolRegistry) -> None:
    """Per step, in each variant: the whole step, BEGIN and COMMIT, and the rest."""
    lwir = chain_lwir(steps, uses="tool.call")
    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for round_ in range(reps + 1):  # the first round warms up, uncounted
            for variant in VARIANTS:
                mode = variant.partition("+")[0]
                world = TimedWorld(Path(tmp) / f"{mode}-{round_}", durability=mode)
                world.idle_s = IDLE_US / 1e6 if variant.endswith("+idle") else 0.0
                asyncio.run(start_run(world, chain_lwir(1, uses="tool.call"), {"seed": "x"},
                                      registry, {}))
                world.tx_seconds = 0.0
                began = time.perf_counter()
                asyncio.run(start_run(world, lwir, {"seed": "x"}, registry, {}))
                whole = (time.perf_counter() - began) / steps * 1e6
                commit = world.tx_seconds / steps * 1e6
                world.close()
                if round_:
                    for name, value in (("whole", whole), ("commit", commit),
                                        ("rest", whole - commit)):
                        figures.setdefault(f"{variant}-{name}", []).append(value)
    med = {name: statistics.median(values) for name, values in figures.items()}
    for variant in VARIANTS:
        what = f"process, asleep {IDLE_US} us after each COMMIT" \
            if variant.endswith("+idle") else variant
        print(f"{what}: {med[f'{variant}-whole']:.0f} us a step = BEGIN and COMMIT "
              f"{med[f'{variant}-commit']:.0f} us + the rest {med[f'{variant}-rest']:.0f} us")
    rest = med["process-rest"]
    print(f"the rest takes {med['strict-rest'] / rest:.2f}x as long in strict mode and "
          f"{med['process+idle-rest'] / rest:.2f}x after a sleep as in process mode "
          f"({steps}-step chain, {reps} rounds, medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--durability", default="strict", choices=("strict", "process"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--dir", default=str(HERE.parent), help="where the world lives "
                        "(/dev/shm: the CPU side alone)")
    parser.add_argument("--split", action="store_true",
                        help="no profile: BEGIN and COMMIT against the rest, both modes")
    parser.add_argument("--reps", type=int, default=5, help="rounds of --split")
    options = parser.parse_args()
    registry = ToolRegistry()
    registry.register("echo", echo)
    if options.split:
        split(options.steps, options.reps, options.dir, registry)
        return
    lwir = chain_lwir(options.steps, uses="tool.call")
    with tempfile.TemporaryDirectory(dir=options.dir) as tmp:
        warm = LocalWorld(Path(tmp) / "warm", durability=options.durability)
        asyncio.run(start_run(warm, chain_lwir(5, uses="tool.call"), {"seed": "x"},
                              registry, {}))
        world = LocalWorld(Path(tmp) / "chain", durability=options.durability)
        profile = cProfile.Profile()
        profile.enable()
        asyncio.run(start_run(world, lwir, {"seed": "x"}, registry, {}))
        profile.disable()
    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    print(f"{options.steps} steps, {options.durability}: {total / options.steps * 1e6:.0f} us "
          "a step under the profiler (its own overhead included)")
    for key, title in (("tottime", "own time"), ("cumtime", "cumulative")):
        print(f"\n-- top {options.top} by {title}, us per step --")
        rows = sorted(stats.stats.items(),  # type: ignore[attr-defined]
                      key=lambda item: item[1][2 if key == "tottime" else 3], reverse=True)
        for (filename, line, name), (_, calls, own, cumulative, _) in rows[:options.top]:
            where = f"{Path(filename).name}:{line}({name})"
            print(f"{own / options.steps * 1e6:8.1f} {cumulative / options.steps * 1e6:8.1f} "
                  f"{calls / options.steps:6.1f}x  {where}")


if __name__ == "__main__":
    main()

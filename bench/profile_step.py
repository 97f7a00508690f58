"""Where a step's time goes: a 200-step chain of trivial tool.call steps under cProfile.

Prints the functions with the most own time and the most cumulative time, per step
(microseconds), so a change to the step path shows up as a line that moved.

Run: .venv/bin/python bench/profile_step.py [--steps N] [--durability strict|process]
     [--top N]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402

from lwtool.runtime.interpreter import start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402


async def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--durability", default="strict", choices=("strict", "process"))
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--dir", default=str(HERE.parent), help="where the world lives "
                        "(/dev/shm: the CPU side alone)")
    options = parser.parse_args()
    registry = ToolRegistry()
    registry.register("echo", echo)
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

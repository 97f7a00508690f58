"""Runtime speed, printed as figures:

1. a 200-step chain of trivial tool.call steps, every step durably committed: per-step
   overhead in microseconds next to a raw SQLite WAL insert+commit baseline (same
   pragmas, same disk, same run); goal within 3x of the baseline;
2. 100 parallel branches of a 20 ms async tool with maxConcurrency 10: goal within
   1.2x of the ideal 200 ms;
3. resume of a 1,000-event run (killed after its last step): goal under 200 ms.

Run: .venv/bin/python bench/runtime.py
"""

from __future__ import annotations

import asyncio
import sqlite3
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

from lwtool.runtime.interpreter import resume_run, start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402


async def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


async def sleepy(args: Any) -> Any:
    await asyncio.sleep(0.02)
    return args


def tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register("echo", echo)
    registry.register("sleepy", sleepy)
    return registry


def sqlite_baseline(folder: Path, n: int = 400) -> float:
    """Microseconds per raw insert+commit with the local world's pragmas."""
    db = sqlite3.connect(folder / "baseline.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE e (run_id TEXT, seq INTEGER, payload TEXT, "
               "PRIMARY KEY (run_id, seq)) WITHOUT ROWID")
    started = time.perf_counter()
    for i in range(n):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO e VALUES ('r', ?, ?)", (i, '{"stepId":"s","output":"x"}'))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed / n * 1e6


def chain_overhead(folder: Path, steps: int = 200) -> float:
    lwir = chain_lwir(steps, uses="tool.call")
    world = LocalWorld(folder / "chain")
    started = time.perf_counter()
    result = asyncio.run(start_run(world, lwir, {"seed": "x"}, tools(), {}))
    elapsed = time.perf_counter() - started
    assert result["status"] == "completed"
    return elapsed / steps * 1e6


def parallel_wall(folder: Path) -> float:
    lwir = {
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "p"},
        "permissions": {"models": [], "tools": ["sleepy"]},
        "steps": [{"id": "each", "uses": "parallel", "with": {
            "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxBranches": 100,
            "maxConcurrency": 10}, "steps": [
                {"id": "work", "uses": "tool.call", "with": {"tool": "sleepy"}}]}],
    }
    world = LocalWorld(folder / "parallel", max_concurrent_steps=10)
    items = [{"id": f"i{n:03d}"} for n in range(100)]
    started = time.perf_counter()
    result = asyncio.run(start_run(world, lwir, {"items": items}, tools(), {}))
    elapsed = time.perf_counter() - started
    assert len(result["output"]) == 100
    return elapsed * 1000


def resume_time(folder: Path) -> tuple[float, int]:
    lwir = chain_lwir(125, uses="tool.call")  # 8 events a step: ~1,000 events
    world = LocalWorld(folder / "resume")
    result = asyncio.run(start_run(world, lwir, {"seed": "x"}, tools(), {}))
    run_id = result["runId"]
    # Simulate a kill after the last step's commit: drop the terminal event.
    db = sqlite3.connect(folder / "resume" / "events" / "events.db", isolation_level=None)
    db.execute("DELETE FROM events WHERE run_id = ? AND type = 'RunCompleted'", (run_id,))
    db.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", (run_id,))
    db.close()
    count = len(world.events(run_id))
    fresh = LocalWorld(folder / "resume")
    started = time.perf_counter()
    resumed = asyncio.run(resume_run(fresh, run_id, tools(), {}))
    elapsed = time.perf_counter() - started
    assert resumed["output"] == result["output"]
    return elapsed * 1000, count


def main() -> None:
    with tempfile.TemporaryDirectory(dir=HERE.parent) as tmp:
        folder = Path(tmp)
        (folder / "warm").mkdir()
        parallel_wall(folder / "warm")  # imports and thread pool: steady state only
        baselines, chains = [], []
        for round_ in range(3):
            baselines.append(sqlite_baseline(folder))
            (folder / "baseline.db").unlink()
            for extra in ("baseline.db-wal", "baseline.db-shm"):
                (folder / extra).unlink(missing_ok=True)
            round_dir = folder / f"chain{round_}"
            round_dir.mkdir()
            chains.append(chain_overhead(round_dir))
        base, step = statistics.median(baselines), statistics.median(chains)
        print(f"raw SQLite WAL insert+commit (synchronous=FULL): {base:.0f} us")
        print(f"200-step tool.call chain, per step (each durably committed): {step:.0f} us "
              f"= {step / base:.2f}x baseline  (goal <= 3x)")
        walls = []
        for round_ in range(3):
            round_dir = folder / f"par{round_}"
            round_dir.mkdir()
            walls.append(parallel_wall(round_dir))
        wall = statistics.median(walls)
        print(f"100 branches x 20 ms tool, maxConcurrency 10: {wall:.0f} ms = "
              f"{wall / 200:.2f}x ideal 200 ms  (goal <= 1.2x)")
        resumes = []
        for round_ in range(3):
            round_dir = folder / f"res{round_}"
            round_dir.mkdir()
            ms, count = resume_time(round_dir)
            resumes.append(ms)
        print(f"resume of a {count}-event run: {statistics.median(resumes):.0f} ms  "
              "(goal < 200 ms)")


if __name__ == "__main__":
    main()

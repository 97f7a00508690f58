"""Runtime speed against the storage limit, printed as figures from one run:

1. raw SQLite WAL insert+commit per commit, synchronous=FULL (an fsync: what survives
   power loss) and NORMAL (survives a killed process), on this disk; and the rows one
   step boundary writes (six events, the output's artifact, the run head) in raw
   SQLite, no lwtool code: the floor under a step with the spec's event vocabulary
   (a row an event in SQLite's default 4 KB pages, as issue 32 defines it; beside it
   the same events in one row and 1 KB pages, as the local world writes them since
   packed rows and small pages); beside it the FULL floor with 60 us
   of CPU work before each commit (on some VMs an fsync right after the last one is
   much cheaper than one after any pause);
2. a 200-step chain of trivial tool.call steps run in this process, per-step time in
   each durability mode = (time of the 200-step run - time of a 1-step run) / 199, as
   for 5., against the step floor of 1. (issue 32: strict <= 1.3x the floor at FULL,
   process <= 2.5x at NORMAL); beside it the Python floor of a step
   (bench/python_floor.py: the same work as one plain loop, no lwtool code), and what
   the 1-step run took (the part of a run paid once); and, for both, the time of a step
   outside the world's BEGIN and COMMIT (on the VMs measured, the work after a strict
   commit's wait runs slower than the same work in process mode, whether the idle vCPU
   halts or polls: docs/performance.md, twelfth pass); and what
   closing the world after the run adds a step (its last WAL checkpoint: in process
   mode the sync of every page the run wrote). Neither 2. nor 5. includes it: `lwtool
   run` ends without closing the store and leaves its WAL to the next checkpoint (a
   later run's, every 4,000 pages) or to the last process that closes it;
3. 100 parallel branches of a 20 ms async tool with maxConcurrency 10 (the world's
   defaults): goal <= 1.08x the ideal 200 ms; beside it the same fan-out in raw
   asyncio with one raw SQLite commit a branch (what timers and the loop cost alone);
   each on the event loop `lwtool run` and `lwtool worker` make (lwtool.new_event_loop:
   timers to the microsecond) and on asyncio's default loop (epoll's timeouts rounded
   up to a whole millisecond);
4. resume of a run of ~1,000 events killed (SIGKILL, a real process) right after its
   last step committed: goal under 20 ms;
5. the same chain as users meet it: `lwtool run --quiet` with a tool module given by
   --tools (a plain sync function, and an async one), each step with an object output
   schema; per step = (time of a 200-step chain - time of a 1-step chain) / 199, so
   process start and imports cancel out (each the fastest of three runs a round).
   Goals as for 2 (issue 32: strict <= 1.3x the step floor at FULL, process <= 2.5x
   at NORMAL). Beside it, what of that is loading and validating the file (each
   `lwtool run` does it first): `compile_file` in a new process, per step the same
   way. Beside the sync tool's cost over the async one: the floor of running a
   function in another thread (a raw ThreadPoolExecutor submit and wait, no lwtool
   code), which a sync tool pays while it runs in threads (its first calls; on a VM
   whose idle vCPUs halt, a wake-up on another CPU is most of it). Once proven quick,
   a sync tool alone in its run is called on the loop and pays no hand-off.

Medians of --reps rounds; the modes alternate within a round so both see the same
disk weather. Run: .venv/bin/python bench/runtime.py [--reps N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _generate import chain_lwir  # noqa: E402
from _timed_world import TimedWorld  # noqa: E402
from python_floor import chain as python_floor  # noqa: E402
from store_layout import DEFAULT_PAGE, KEYED, PACKED, SMALL_PAGE, per_commit  # noqa: E402

from lwtool.runtime import event_loop  # noqa: E402
from lwtool.runtime.interpreter import resume_run, start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402
from lwtool.world.local_store import WAL_CHECKPOINT_PAGES  # noqa: E402

MODES = ("strict", "process")
LOOPS = {"lwtool": "on lwtool's event loop (lwtool run, worker)",
         "default": "on asyncio's default loop (timeouts rounded up to a ms)"}
T = TypeVar("T")
RESUME_STEPS = 166  # 6 events a step: ~1,000 events
FLOOR_STEPS = 200  # the Python floor's chain


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


def raw_commit(folder: Path, synchronous: str, n: int = 400) -> float:
    """Microseconds per raw insert+commit in WAL mode (checkpointed as lwtool does)."""
    path = folder / f"raw-{synchronous}.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES[synchronous]}")
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


def step_rows(folder: Path, synchronous: str, layout: str = KEYED,
              page_size: int = DEFAULT_PAGE) -> float:
    """Microseconds per commit of one step boundary's rows, raw (bench/store_layout),
    with the WAL checkpointed as lwtool does at that level (a small WAL, written over
    in place, makes FULL commits cheaper: the floor keeps that too). KEYED, a row an
    event, in 4 KB pages is issue 32's step floor; PACKED in SMALL_PAGE pages is what
    the local world writes now."""
    return per_commit(folder, layout, synchronous, 300, WAL_CHECKPOINT_PAGES[synchronous],
                      page_size=page_size)[0]


SPACED_GAP_US = 60  # about a process-mode step's own work here, between two commits


def spaced_step_rows(folder: Path) -> float:
    """The FULL step floor with SPACED_GAP_US of CPU work before each commit (not
    counted): on a VM whose disk answers an fsync issued right after the last one
    faster than one issued after a pause, this is what an fsync costs a loop that does
    anything between its commits (the back-to-back floor is the best case)."""
    return per_commit(folder, KEYED, "FULL", 300, WAL_CHECKPOINT_PAGES["FULL"],
                      SPACED_GAP_US)[0]


def chain_run(folder: Path, durability: str, steps: int) -> tuple[float, float, float]:
    """Seconds of one chain run of `steps` steps in a new world, start to RunCompleted,
    the seconds of it spent in the world's BEGINs and COMMITs (timing them adds two
    perf_counter calls to each, well under a microsecond a step), and the seconds of
    closing the world after it."""
    lwir = chain_lwir(steps, uses="tool.call")
    world = TimedWorld(folder / f"chain-{durability}-{steps}", durability=durability)
    started = time.perf_counter()
    result = asyncio.run(start_run(world, lwir, {"seed": "x"}, tools(), {}))
    elapsed = time.perf_counter() - started
    world.close()
    closed = time.perf_counter() - started - elapsed
    assert result["status"] == "completed"
    return elapsed, world.tx_seconds, closed


def chain_step(folder: Path, durability: str, steps: int = 200
               ) -> tuple[float, float, float, float]:
    """Microseconds per step of a chain, as the CLI figure takes them: (time of a
    `steps`-step run - time of a 1-step run) / (steps - 1), so what a run costs once
    (its start, RunStarted and RunCompleted, its threads) is not spread over its steps
    (the Python floor's loop has none of it either); the same for the time outside
    BEGIN and COMMIT; that 1-step run in ms; and per step, the same way, closing the
    world after the run."""
    one, one_tx, one_close = chain_run(folder, durability, 1)
    many, many_tx, many_close = chain_run(folder, durability, steps)
    return ((many - one) / (steps - 1) * 1e6,
            ((many - many_tx) - (one - one_tx)) / (steps - 1) * 1e6, one * 1e3,
            (many_close - one_close) / (steps - 1) * 1e6)


FAN_OUT = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "p"},
    "permissions": {"models": [], "tools": ["sleepy"]},
    "steps": [{"id": "each", "uses": "parallel", "with": {
        "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxBranches": 100,
        "maxConcurrency": 10}, "steps": [
            {"id": "work", "uses": "tool.call", "with": {"tool": "sleepy"}}]}],
}


def run_on(loop: str, main: Coroutine[Any, Any, T]) -> T:
    """`main` run on lwtool's event loop (`lwtool run` and `worker` make theirs with
    new_event_loop: timers to the microsecond) or on asyncio's default one."""
    if loop == "lwtool":
        return event_loop.run(main)
    return asyncio.run(main)


def fan_out(folder: Path, durability: str, loop: str = "lwtool") -> float:
    """Milliseconds for 100 branches of a 20 ms tool, 10 at a time (ideal: 200)."""
    world = LocalWorld(folder / f"fan-{durability}-{loop}", durability=durability)
    items = [{"id": f"i{n:03d}"} for n in range(100)]
    started = time.perf_counter()
    result = run_on(loop, start_run(world, FAN_OUT, {"items": items}, tools(), {}))
    elapsed = time.perf_counter() - started
    world.close()
    assert len(result["output"]) == 100
    return elapsed * 1000


def raw_fan_out(folder: Path, synchronous: str, loop: str = "default") -> float:
    """Milliseconds for the fan-out above without lwtool: 100 tasks, 10 at a time, each
    sleeping 20 ms then committing one row."""
    db = sqlite3.connect(folder / f"raw-fan-{synchronous}-{loop}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute("CREATE TABLE e (k TEXT PRIMARY KEY, payload TEXT) WITHOUT ROWID")

    async def fan() -> None:
        gate = asyncio.Semaphore(10)

        async def branch(n: int) -> None:
            async with gate:
                await asyncio.sleep(0.02)
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO e VALUES (?, ?)", (f"i{n:03d}", '{"id":"x"}'))
            db.execute("COMMIT")

        await asyncio.gather(*(branch(n) for n in range(100)))

    started = time.perf_counter()
    run_on(loop, fan())
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed * 1000


def killed_run(folder: Path) -> tuple[LocalWorld, str]:
    """A chain run SIGKILLed by the fault hook right after its last StepCompleted."""
    data = folder / "resume"
    env = {**os.environ, "LWTOOL_FAULT_KILL_AFTER": f"StepCompleted@s{RESUME_STEPS - 1}"}
    proc = subprocess.run([sys.executable, __file__, "--child", str(data)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    world = LocalWorld(data)
    (run,) = world.list_runs()
    assert run.status == "running"
    return world, run.run_id


def resume(folder: Path) -> tuple[float, int]:
    """Milliseconds to resume the killed run to its result, and its event count."""
    world, run_id = killed_run(folder)
    count = len(world.events(run_id))
    world.close()
    fresh = LocalWorld(folder / "resume")
    started = time.perf_counter()
    resumed = asyncio.run(resume_run(fresh, run_id, tools(), {}))
    elapsed = time.perf_counter() - started
    fresh.close()
    assert resumed["status"] == "completed"
    return elapsed * 1000, count


CLI_TRIES = 3  # runs of each length a round; the fastest counts (process start-up varies)
# as users start it: with the bytecode cache (a set PYTHONDONTWRITEBYTECODE would leave
# every module compiled again in each process)
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cli_step(folder: Path, durability: str, flavour: str) -> float:
    """Per-step microseconds of `lwtool run` (see 5. above): the fastest of CLI_TRIES
    runs of each length, so one slow process start does not decide the difference."""
    import json

    spans: dict[int, float] = {}
    for attempt in range(CLI_TRIES):
        for steps in (1, 200):
            path = folder / f"cli-{steps}.lwir.json"
            path.write_text(json.dumps(chain_lwir(steps, uses="tool.call")))
            data = folder / f"cli-{durability}-{flavour}-{steps}-{attempt}"
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "lwtool", "run", str(path),
                                   "--input", "-", "--tools",
                                   f"{HERE / '_cli_tools.py'}:{flavour}_tools",
                                   "--data-dir", str(data), "--durability", durability,
                                   "--quiet"], input='{"seed": "x"}', capture_output=True,
                                  text=True, cwd=HERE.parent, env=CLI_ENV)
            elapsed = time.perf_counter() - started
            spans[steps] = min(spans.get(steps, elapsed), elapsed)
            if done.returncode != 0:
                raise SystemExit(done.stderr)
    return (spans[200] - spans[1]) / 199 * 1e6


VALIDATE_ONCE = ("import sys, time\nfrom lwtool.compile import compile_file\n"
                 "started = time.perf_counter()\ncompiled = compile_file(sys.argv[1])\n"
                 "assert compiled.ok\nprint(time.perf_counter() - started)")


def validation_step(folder: Path) -> float:
    """Per-step microseconds of what `lwtool run` pays to load and validate the file
    before it runs (`compile_file` once in a new process, its imports done first), as
    5. takes them: (200-step file - 1-step file) / 199, the fastest of CLI_TRIES."""
    import json

    spans: dict[int, float] = {}
    for _ in range(CLI_TRIES):
        for steps in (1, 200):
            path = folder / f"validate-{steps}.lwir.json"
            path.write_text(json.dumps(chain_lwir(steps, uses="tool.call")))
            done = subprocess.run([sys.executable, "-c", VALIDATE_ONCE, str(path)],
                                  capture_output=True, text=True, cwd=HERE.parent,
                                  env=CLI_ENV, check=True)
            took = float(done.stdout)
            spans[steps] = min(spans.get(steps, took), took)
    return (spans[200] - spans[1]) / 199 * 1e6


def thread_round_trip(calls: int = 2000) -> float:
    """Microseconds to run a no-op in a worker thread and have its result, as a sync
    tool's step waits for it (Tool.invoke): the floor of the thread hand-off."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as threads:
        for _ in range(100):
            threads.submit(abs, 1).result()
        started = time.perf_counter()
        for _ in range(calls):
            future = threads.submit(abs, 1)
            future.exception(timeout=0.01)
            future.result()
        return (time.perf_counter() - started) / calls * 1e6


def child(data: Path) -> None:
    asyncio.run(start_run(LocalWorld(data), chain_lwir(RESUME_STEPS, uses="tool.call"),
                          {"seed": "x"}, tools(), {}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child)
        return
    figures: dict[str, list[float]] = {}

    def keep(name: str, value: float) -> None:
        figures.setdefault(name, []).append(value)

    count = 0
    with tempfile.TemporaryDirectory(dir=HERE.parent) as tmp:
        warm = Path(tmp) / "warm"
        warm.mkdir()
        fan_out(warm, "strict")  # imports and thread pools: steady state only
        for round_ in range(options.reps):
            folder = Path(tmp) / f"r{round_}"
            folder.mkdir()
            for mode in MODES:
                synchronous = "FULL" if mode == "strict" else "NORMAL"
                keep(f"raw-{mode}", raw_commit(folder, synchronous))
                keep(f"rows-{mode}", step_rows(folder, synchronous))
                keep(f"packed-{mode}", step_rows(folder, synchronous, PACKED, SMALL_PAGE))
                if mode == "strict":
                    keep("rows-spaced", spaced_step_rows(folder))
                per_step, rest, one_step_run, closing = chain_step(folder, mode)
                keep(f"chain-{mode}", per_step)
                keep(f"close-{mode}", closing)
                keep(f"rest-{mode}", rest)
                keep(f"run-{mode}", one_step_run)
                commits: list[float] = []
                floor_step = python_floor(folder, synchronous, FLOOR_STEPS, commits)
                keep(f"python-{mode}", floor_step)
                keep(f"python-rest-{mode}", floor_step - sum(commits) / FLOOR_STEPS * 1e6)
                for loop in LOOPS:
                    keep(f"fan-{mode}-{loop}", fan_out(folder, mode, loop))
                    keep(f"rawfan-{mode}-{loop}", raw_fan_out(folder, synchronous, loop))
                for flavour in ("sync", "async"):
                    keep(f"cli-{flavour}-{mode}", cli_step(folder, mode, flavour))
            keep("validation", validation_step(folder))
            ms, count = resume(folder)
            keep("resume", ms)
            keep("handoff", thread_round_trip())
    med = {name: statistics.median(values) for name, values in figures.items()}
    full, normal = med["raw-strict"], med["raw-process"]
    print(f"raw SQLite WAL insert+commit: synchronous=FULL {full:.0f} us, "
          f"NORMAL {normal:.0f} us")
    print(f"one step boundary's rows, raw SQLite: FULL {med['rows-strict']:.0f} us = "
          f"{med['rows-strict'] / full:.2f}x raw FULL, NORMAL {med['rows-process']:.0f} us = "
          f"{med['rows-process'] / normal:.2f}x raw NORMAL (the floor of a step)")
    print(f"the same rows with the six events in one row, in {SMALL_PAGE // 1024} KB pages, as "
          f"lwtool writes them: FULL {med['packed-strict']:.0f} us, NORMAL "
          f"{med['packed-process']:.0f} us (lwtool's chain against it: " + ", ".join(
              f"{mode} {med[f'chain-{mode}'] / med[f'packed-{mode}']:.2f}x" for mode in MODES)
          + ")")
    print(f"the same FULL commit after {SPACED_GAP_US} us of other work (a spin, not "
          f"counted): {med['rows-spaced']:.0f} us = {med['rows-spaced'] / med['rows-strict']:.2f}x"
          f" the back-to-back floor; a strict chain step against it: "
          f"{med['chain-strict'] / med['rows-spaced']:.2f}x")
    rows = {"strict": med["rows-strict"], "process": med["rows-process"]}
    print("200-step tool.call chain in this process, per step: " + "; ".join(
        f"{mode} {med[f'chain-{mode}']:.0f} us = {med[f'chain-{mode}'] / rows[mode]:.2f}x "
        f"the step floor" for mode in MODES) + " (goals: strict <= 1.3x, process <= 2.5x); "
        "a 1-step run: " + ", ".join(f"{mode} {med[f'run-{mode}']:.2f} ms" for mode in MODES))
    print("Python floor of a step (bench/python_floor.py): " + "; ".join(
        f"{mode} {med[f'python-{mode}']:.0f} us = {med[f'python-{mode}'] / rows[mode]:.2f}x "
        f"the step floor (lwtool {med[f'chain-{mode}'] / med[f'python-{mode}']:.2f}x it)"
        for mode in MODES))
    print("outside BEGIN and COMMIT, per step: " + "; ".join(
        f"lwtool {mode} {med[f'rest-{mode}']:.0f} us, Python floor {mode} "
        f"{med[f'python-rest-{mode}']:.0f} us" for mode in MODES) + " (strict mode's "
        f"rest {med['rest-strict'] / med['rest-process']:.2f}x process mode's, the Python "
        f"floor's {med['python-rest-strict'] / med['python-rest-process']:.2f}x: the work "
        "after each fsync's wait runs slower)")
    print("closing the world after the chain (its last WAL checkpoint), per step: " + "; ".join(
        f"{mode} {med[f'close-{mode}']:.1f} us" for mode in MODES) + " (paid by a later "
        "checkpoint or the store's last close; not in the chain figures)")
    for loop in LOOPS:
        print(f"100 branches x 20 ms tool, maxConcurrency 10, {LOOPS[loop]}: strict "
              f"{med[f'fan-strict-{loop}']:.0f} ms = {med[f'fan-strict-{loop}'] / 200:.3f}x "
              f"ideal 200 ms, process {med[f'fan-process-{loop}']:.0f} ms = "
              f"{med[f'fan-process-{loop}'] / 200:.3f}x (goal <= 1.08x); raw asyncio + "
              f"SQLite {med[f'rawfan-strict-{loop}']:.0f} ms (FULL) / "
              f"{med[f'rawfan-process-{loop}']:.0f} ms (NORMAL)")
    print(f"resume of a killed {count}-event run: {med['resume']:.1f} ms (goal < 20 ms)")
    print("`lwtool run`, 200-step chain with output schemas, per step: " + "; ".join(
        f"{flavour} tool {mode} {med[f'cli-{flavour}-{mode}']:.0f} us = "
        f"{med[f'cli-{flavour}-{mode}'] / rows[mode]:.2f}x the step floor"
        for flavour in ("sync", "async") for mode in MODES)
        + " (goals: strict <= 1.3x, process <= 2.5x); of each, loading and validating "
        f"the file: {med['validation']:.0f} us")
    print("a sync tool's step over an async one's: " + "; ".join(
        f"{mode} {med[f'cli-sync-{mode}'] - med[f'cli-async-{mode}']:.0f} us" for mode in MODES)
        + " (a tool proven quick is called on the loop; in a thread it would pay at least "
        f"a raw thread round trip: {med['handoff']:.0f} us)")
    print(f"({options.reps} rounds, medians)")


if __name__ == "__main__":
    main()

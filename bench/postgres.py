"""The PostgreSQL world against PostgreSQL itself, on the loopback server, in one run:

1. raw: one transaction per step boundary holding the rows lwtool writes for a
   tool.call step (six events of the spec's vocabulary, the output's artifact and its
   chunk, the run's head moved), straight through psycopg, synchronous_commit on;
2. lwtool: a 200-step chain of trivial tool.call steps in `lwtool.postgres_world`,
   strict durability, per step, start to RunCompleted.

Goal: (2) within 2x of (1). Beside it the same chain executed by one `lwtool worker`
(each run it claims executes on a loop and thread of its own, committing inline).
Then throughput with workers: 400 independent 5 ms tool.call steps drained by 1, 2 and
4 `lwtool worker` processes (concurrency 4 each): steps per second (goal: 4 workers at
least 3x one), as 20 runs of a 20-branch parallel step (the branches of one run spread
over the workers) and as 400 one-step runs. Each round uses a database of its own,
dropped after. Last (or alone, `--only costs`): one worker's own CPU and database round
trips a step (distributed branches, one-step runs; /proc and libpq's protocol trace),
and an idle worker's latency from an enqueue's commit to its claim and RunStarted.
Run: .venv/bin/python bench/postgres.py [--url postgresql://postgres@127.0.0.1:5432]
[--reps N] [--only costs]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import psycopg  # noqa: E402
from _generate import chain_lwir  # noqa: E402

from lwtool.runtime.interpreter import start_run  # noqa: E402
from lwtool.tools import ToolRegistry  # noqa: E402
from lwtool.world.postgres import PostgresWorld  # noqa: E402
from lwtool.world.postgres_schema import migrate  # noqa: E402
from tests.fixtures.postgres import database  # noqa: E402

STEPS = 200
EVENT = json.dumps({"stepId": "s", "uses": "tool.call", "visit": 0, "attempt": 1,
                    "inputHash": "sha256:" + "0" * 64, "input": {"value": "x"},
                    "manifest": {"harnessId": "lwtool/workflow-harness@1",
                                 "stepConfigHash": "sha256:" + "1" * 64}})


def raw_step_boundary(url: str, n: int = STEPS) -> float:
    """Microseconds per transaction of one step boundary's rows, no lwtool code."""
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute("INSERT INTO lwtool.versions VALUES ('v', '{}')")
        conn.execute("INSERT INTO lwtool.runs (run_id, version_id, status, created_at, "
                     "updated_at, input, options) VALUES ('r', 'v', 'running', 0, 0, '{}', "
                     "'{}')")
        started = time.perf_counter()
        seq = 0
        for i in range(n):
            data = f'{{"value": "x{i}"}}'.encode()
            ref = f"artifact://sha256:{hashlib.sha256(data).hexdigest()}"
            with conn.transaction():
                conn.execute("SELECT last_seq FROM lwtool.runs WHERE run_id = 'r' FOR UPDATE")
                conn.execute("INSERT INTO lwtool.artifacts VALUES (%s, %s) ON CONFLICT DO "
                             "NOTHING", (ref, len(data)))
                conn.execute("INSERT INTO lwtool.artifact_chunks VALUES (%s, 0, %s) ON "
                             "CONFLICT DO NOTHING", (ref, data))
                rows = [("r", seq + k + 1, "E", "s", EVENT, 0.0, "h") for k in range(6)]
                with conn.cursor() as cur:
                    cur.executemany("INSERT INTO lwtool.events VALUES (%s, %s, %s, %s, %s, "
                                    "%s, %s)", rows)
                seq += 6
                conn.execute("UPDATE lwtool.runs SET last_seq = %s, last_hash = 'h', "
                             "updated_at = 0 WHERE run_id = 'r'", (seq,))
        return (time.perf_counter() - started) / n * 1e6


async def echo(args: Any) -> Any:
    return {"value": str(args.get("value"))}


def lwtool_chain(url: str, folder: Path) -> float:
    """Microseconds per step of a 200-step tool.call chain in the PostgreSQL world."""
    tools = ToolRegistry()
    tools.register("echo", echo)
    world = PostgresWorld(url, folder, durability="strict")
    started = time.perf_counter()
    result = asyncio.run(start_run(world, chain_lwir(STEPS, uses="tool.call"), {"seed": "x"},
                                   tools, {}))
    elapsed = time.perf_counter() - started
    world.close()
    assert result["status"] == "completed"
    return elapsed / STEPS * 1e6


WORKER_TOOLS = HERE / "_worker_tools.py"


def worker_chain(url: str, folder: Path) -> float:
    """Microseconds per step of the same chain executed by one `lwtool worker` (its run
    on a loop of its own, committing inline): from s0's StepCompleted to the last
    one's, by the commit times in the log."""
    import subprocess

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.postgres_queue import RunQueue

    world = PostgresWorld(url, folder)
    lwir = chain_lwir(STEPS, uses="tool.call")
    version = workflow_version_id(lwir)
    world.register_version(version, lwir)
    RunQueue(world).enqueue("chain", version, {"seed": "x"}, {"durability": "strict"})
    done = subprocess.run([sys.executable, "-m", "lwtool", "worker", "--world", url,
                           "--tools", f"{WORKER_TOOLS}:tools", "--data-dir", str(folder),
                           "--drain", "-v"], cwd=HERE.parent, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0 and "run chain completed" in done.stderr, done.stderr
    at = [row[0] for row in world._read(
        "SELECT at FROM lwtool.events WHERE run_id = 'chain' AND type = 'StepCompleted' "
        "ORDER BY seq")]
    world.close()
    assert len(at) == STEPS
    return (at[-1] - at[0]) / (STEPS - 1) * 1e6
ONE_STEP = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "one"}, "permissions": {"tools": ["nap"]},
            "steps": [{"id": "nap", "uses": "tool.call", "with": {"tool": "nap"}}]}


FAN_RUNS, FAN_WIDTH = 20, 20
FAN = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
       "metadata": {"name": "fan"}, "permissions": {"tools": ["nap"]},
       "steps": [{"id": "fan", "uses": "parallel",
                  "with": {"items": "{{ input.items }}", "maxBranches": FAN_WIDTH,
                           "maxConcurrency": FAN_WIDTH},
                  "steps": [{"id": "nap", "uses": "tool.call", "with": {"tool": "nap"}}]}]}


def busy_seconds() -> float:
    """CPU seconds this machine has spent busy (every process: workers and server)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def workers_throughput(url: str, folder: Path, workers: int, branches: bool
                       ) -> tuple[float, float]:
    """Steps per second of 400 independent 5 ms steps executed by `workers` worker
    processes: 400 one-step runs, or (`branches`) 20 runs of a 20-branch parallel step,
    whose branches any worker executes. Also the machine's busy CPU seconds a step.
    Steady state: the workers are up and idle before the runs are queued (in one
    transaction); the clock stops when the queue has ended every run."""
    import signal
    import subprocess

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.postgres_queue import RunQueue

    world = PostgresWorld(url, folder)
    lwir = FAN if branches else ONE_STEP
    version = workflow_version_id(lwir)
    world.register_version(version, lwir)
    queue = RunQueue(world)
    procs = [subprocess.Popen([sys.executable, "-m", "lwtool", "worker", "--world", url,
                               "--tools", f"{WORKER_TOOLS}:tools", "--data-dir", str(folder),
                               "--concurrency", "4"], cwd=HERE.parent,
                              stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    for proc in procs:  # up, and through the imports a first claim makes
        assert proc.stderr is not None and "started" in proc.stderr.readline()
    time.sleep(1.0)
    runs = FAN_RUNS if branches else FAN_RUNS * FAN_WIDTH
    with world._tx() as conn:
        conn.execute("SELECT 1")
        for n in range(runs):
            conn.execute("INSERT INTO lwtool.queue (run_id, version_id, input, options, "
                         "state, enqueued_at) VALUES (%s, %s, %s, %s, 'queued', %s)",
                         (f"w{n:04d}", version, json.dumps({"items": list(range(FAN_WIDTH))}),
                          '{"durability": "strict"}', time.time()))
        started, busy = time.perf_counter(), busy_seconds()
    while queue.pending():
        time.sleep(0.01)
    elapsed, spent = time.perf_counter() - started, busy_seconds() - busy
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.communicate(timeout=60)
    failed = world._read("SELECT count(*) FROM lwtool.queue WHERE state <> 'done'")[0][0]
    world.close()
    assert failed == 0, f"{failed} runs did not complete"
    steps = FAN_RUNS * FAN_WIDTH
    return steps / elapsed, spent / steps


def cpu_of(pids: list[int]) -> float:
    """CPU seconds (user and system, every thread) the processes `pids` have used."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def round_trips(folder: Path) -> int:
    """Queries and Syncs the traced connections sent (lwtool/bench/_trace)."""
    count = 0
    for trace in folder.glob("*.trace"):
        for line in trace.read_text(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) > 2 and parts[0] == "F" and parts[2].split(" ")[0] in (
                    "Query", "Sync"):
                count += 1
    return count


def distributed_costs(url: str, folder: Path, branches: bool,
                      traced: bool = True) -> dict[str, float]:
    """One idle worker (concurrency 4), then FAN_RUNS runs of the fan (or as many
    one-step runs as it has branches) queued in one transaction: the worker's own CPU
    a step (from /proc, its every thread), its database round trips a step (libpq's
    trace; `traced` False: no trace, whose writing costs the worker CPU of its own, and
    no round trips counted), and, with one more run queued to the idle worker
    afterwards, the time from the enqueue's commit to its claim and to its
    RunStarted."""
    import signal
    import subprocess

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.postgres_queue import RunQueue

    world = PostgresWorld(url, folder)
    lwir = FAN if branches else ONE_STEP
    version = workflow_version_id(lwir)
    world.register_version(version, lwir)
    queue = RunQueue(world)
    traces = Path(tempfile.mkdtemp(dir=folder))
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "worker", "--world", url, "--tools",
         f"{WORKER_TOOLS}:tools", "--data-dir", str(folder), "--concurrency", "4"],
        cwd=HERE.parent, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(HERE / "_trace"),
             **({"LWTOOL_BENCH_TRACE_DIR": str(traces)} if traced else {})})
    assert proc.stderr is not None and "started" in proc.stderr.readline()

    def enqueue(ids: list[str]) -> float:
        items = json.dumps({"items": list(range(FAN_WIDTH))})
        with world._tx() as conn:
            for run_id in ids:
                conn.execute("INSERT INTO lwtool.queue (run_id, version_id, input, options, "
                             "state, enqueued_at, needs) VALUES (%s, %s, %s, %s, 'queued', "
                             "%s, '[\"nap\"]')", (run_id, version, items,
                                                   '{"durability": "strict"}', time.time()))
            conn.execute("NOTIFY lwtool_work, 'default'")
        return time.time()

    def drained() -> None:
        while queue.pending():
            time.sleep(0.005)

    enqueue(["warm"])  # the first run's imports are not a step's cost
    drained()
    time.sleep(0.5)
    trips, cpu = round_trips(traces), cpu_of([proc.pid])
    runs = FAN_RUNS if branches else FAN_RUNS * FAN_WIDTH
    enqueue([f"w{n:04d}" for n in range(runs)])
    drained()
    steps = FAN_RUNS * FAN_WIDTH
    cpu, trips = (cpu_of([proc.pid]) - cpu) / steps, (round_trips(traces) - trips) / steps
    latencies = []
    for n in range(5):
        time.sleep(0.3)  # idle: waiting on LISTEN
        committed = enqueue([f"idle{n}"])
        drained()
        claimed = world._read("SELECT claimed_at FROM lwtool.queue WHERE run_id = %s",
                              (f"idle{n}",))[0][0]
        started = world.events(f"idle{n}", ["RunStarted"])[0].at
        latencies.append((claimed - committed, started - committed))
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    world.close()
    return {"cpu": cpu, "trips": trips,
            "claim": statistics.median(c for c, _ in latencies),
            "start": statistics.median(s for _, s in latencies)}


# The fan after a step only the owner can execute (`echo`, which the helper lacks): the
# helper claims no run, only branches of the owner's runs
OWNED_FAN = {**FAN, "permissions": {"tools": ["nap", "echo"]}, "steps": [
    {"id": "own", "uses": "tool.call", "with": {"tool": "echo", "args": {"value": "x"}}},
    {**FAN["steps"][0], "needs": ["own"]}]}
HELPER_TOOLS = "import time\n\ndef nap(args):\n    time.sleep(0.005)\n    return {'ok': True}" \
    "\n\ntools = {'nap': nap}\n"


def helper_costs(url: str, folder: Path) -> dict[str, float]:
    """Two idle workers (concurrency 4 each), then FAN_RUNS runs of OWNED_FAN: the
    owner claims every run, the helper (without `echo`) only their branches. The CPU a
    branch costs the helper (its CPU over the branches it executed) and the owner (its
    CPU over the branches it executed itself plus the ends it heard, counted per
    branch of the runs)."""
    import signal
    import socket
    import subprocess

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.postgres_queue import RunQueue

    world = PostgresWorld(url, folder)
    version = workflow_version_id(OWNED_FAN)
    world.register_version(version, OWNED_FAN)
    queue = RunQueue(world)
    (folder / "helper_tools.py").write_text(HELPER_TOOLS)
    procs = {role: subprocess.Popen(
        [sys.executable, "-m", "lwtool", "worker", "--world", url, "--tools", tools,
         "--data-dir", str(folder), "--concurrency", "4"], cwd=HERE.parent,
        stderr=subprocess.PIPE, text=True)
        for role, tools in (("owner", f"{WORKER_TOOLS}:tools"),
                            ("helper", f"{folder / 'helper_tools.py'}:tools"))}
    for proc in procs.values():
        assert proc.stderr is not None and "started" in proc.stderr.readline()
    helper_name = f"{socket.gethostname()}:{procs['helper'].pid}"

    def run_all(ids: list[str]) -> None:
        for run_id in ids:
            queue.enqueue(run_id, version, {"items": list(range(FAN_WIDTH))},
                          {"durability": "strict"}, ["echo", "nap"])
        while queue.pending():
            time.sleep(0.005)

    def helped() -> int:
        return int(world._read("SELECT count(*) FROM lwtool.branches WHERE worker = %s "
                               "AND state = 'done'", (helper_name,))[0][0])

    run_all([f"warm{n}" for n in range(4)])  # both through their first branch's imports
    time.sleep(0.5)
    before = {role: cpu_of([proc.pid]) for role, proc in procs.items()}
    by_helper = helped()
    run_all([f"h{n:04d}" for n in range(FAN_RUNS)])
    by_helper = helped() - by_helper
    spent = {role: cpu_of([proc.pid]) - before[role] for role, proc in procs.items()}
    for proc in procs.values():
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    world.close()
    return {"helper": spent["helper"] / max(by_helper, 1),
            "owner": spent["owner"] / (FAN_RUNS * FAN_WIDTH),
            "share": by_helper / (FAN_RUNS * FAN_WIDTH)}


def chain_trips(url: str, folder: Path) -> float:
    """Database round trips a step of a 200-step chain executed by one worker (the run's
    claim, start and end included)."""
    import subprocess

    from lwtool.canonical.digest import workflow_version_id
    from lwtool.world.postgres_queue import RunQueue

    world = PostgresWorld(url, folder)
    lwir = chain_lwir(STEPS, uses="tool.call")
    version = workflow_version_id(lwir)
    world.register_version(version, lwir)
    RunQueue(world).enqueue("chain", version, {"seed": "x"}, {"durability": "strict"})
    world.close()
    traces = Path(tempfile.mkdtemp(dir=folder))
    done = subprocess.run(
        [sys.executable, "-m", "lwtool", "worker", "--world", url, "--tools",
         f"{WORKER_TOOLS}:tools", "--data-dir", str(folder), "--drain"], cwd=HERE.parent,
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(HERE / "_trace"),
             "LWTOOL_BENCH_TRACE_DIR": str(traces)})
    assert done.returncode == 0, done.stderr
    return round_trips(traces) / STEPS


def print_costs(url: str, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        found: dict[bool, list[dict[str, float]]] = {True: [], False: []}
        chains, helpers = [], []
        for _ in range(reps):
            for branches in (True, False):
                with database(url) as one:  # CPU untraced; round trips traced
                    cost = distributed_costs(one, Path(tmp), branches, traced=False)
                with database(url) as one:
                    cost["trips"] = distributed_costs(one, Path(tmp), branches)["trips"]
                found[branches].append(cost)
            with database(url) as one:
                chains.append(chain_trips(one, Path(tmp)))
            with database(url) as one:
                helpers.append(helper_costs(one, Path(tmp)))
    print(f"One `lwtool worker` (concurrency 4), median of {reps} (CPU measured without "
          "the protocol trace that counts round trips: writing it cost 0.3-0.9 ms a step here):")
    for branches, what in ((True, "distributed branch"), (False, "one-step run")):
        rows = found[branches]
        cpu = statistics.median(r["cpu"] for r in rows) * 1e3
        trips = statistics.median(r["trips"] for r in rows)
        print(f"  a {what}: worker CPU {cpu:.2f} ms"
              + ("  (goal <= 1.5 ms)" if branches else "")
              + f", {trips:.1f} database round trips"
              + (" (goal <= 3)" if branches else
                 " (the step's commit, and the run's claim, creation and end)"))
    helper = statistics.median(h["helper"] for h in helpers) * 1e3
    owner = statistics.median(h["owner"] for h in helpers) * 1e3
    share = statistics.median(h["share"] for h in helpers) * 100
    print(f"  a distributed branch another worker executes (the helper path; {share:.0f}% "
          f"of the branches): helper CPU {helper:.2f} ms (goal <= 1.5 ms); the owner's CPU "
          f"a branch of its runs {owner:.2f} ms")
    print(f"  a step of a {STEPS}-step chain: {statistics.median(chains):.2f} database round "
          "trips (goal <= 3)")
    rows = found[True] + found[False]
    claim = statistics.median(r["claim"] for r in rows) * 1e3
    start = statistics.median(r["start"] for r in rows) * 1e3
    print(f"  an idle worker: enqueue to claim {claim:.1f} ms, enqueue to RunStarted "
          f"{start:.1f} ms (claim-to-start {start - claim:.1f} ms; goal < 10 ms)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--only", choices=["costs"], help="costs: only a worker's CPU and "
                        "round trips a step, and an idle worker's claim latency")
    args = parser.parse_args()
    if args.only == "costs":
        print_costs(args.url, args.reps)
        return
    raws, chains, worker_chains = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):  # alternate, so both see the same disk weather
            with database(args.url) as url:
                raws.append(raw_step_boundary(url))
            with database(args.url) as url:
                chains.append(lwtool_chain(url, Path(tmp)))
            with database(args.url) as url:
                worker_chains.append(worker_chain(url, Path(tmp)))
        rates: dict[bool, dict[int, tuple[float, float]]] = {False: {}, True: {}}
        for branches in (True, False):
            for workers in (1, 2, 4):
                with database(args.url) as url:
                    rates[branches][workers] = workers_throughput(url, Path(tmp), workers,
                                                                  branches)
    raw, chain = statistics.median(raws), statistics.median(chains)
    print(f"PostgreSQL on {args.url.split('@')[-1]} (median of {args.reps}):")
    print(f"  raw step boundary (6 events, artifact, head; one transaction): {raw:.0f} µs")
    print(f"  lwtool 200-step tool.call chain, strict: {chain:.0f} µs a step = "
          f"{chain / raw:.2f}x raw  (goal <= 2x)")
    worker = statistics.median(worker_chains)
    print(f"  the same chain executed by one `lwtool worker`: {worker:.0f} µs a step = "
          f"{worker / raw:.2f}x raw")
    for branches, what in ((True, f"{FAN_RUNS} runs x {FAN_WIDTH} parallel branches"),
                           (False, f"{FAN_RUNS * FAN_WIDTH} one-step runs")):
        rate = {w: r for w, (r, _) in rates[branches].items()}
        cpu = rates[branches][1][1]  # busy CPU seconds a step, one worker
        ceiling = os.cpu_count() or 1
        print(f"  {what} of a 5 ms tool, drained by workers (4 at a time each): "
              + ", ".join(f"{w} worker(s) {r:.0f} steps/s" for w, r in rate.items())
              + f"; 4 workers = {rate[4] / rate[1]:.2f}x one  (goal >= 3x)")
        print(f"    floor: a step costs {cpu * 1e3:.1f} ms of CPU (workers and server); "
              f"{ceiling} cores cap any number of workers at {ceiling / cpu:.0f} steps/s = "
              f"{ceiling / cpu / rate[1]:.2f}x one worker")
    print_costs(args.url, args.reps)


if __name__ == "__main__":
    main()

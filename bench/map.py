"""A map step over 10,000 items of a 5 ms tool, in batches of 50, 16 shards at once
(issue 66): wall time against the ideal (items x 5 ms / concurrency = 3.125 s), in the
local world in this process (goal: within 1.25x) and, with `--url`, in the PostgreSQL
world with 1 and 2 `lwtool worker` processes (goals: 1 worker within 1.5x; 2 workers
at least 1.6x one where each has a core), with the workers' CPU per item (goal at most
0.3 ms) and the parent's log length (a record a shard, never an event an item). One
worker within 1.5x of the ideal caps what a second can add at 1.5x, so the scaling is
also measured where a worker's slots (8), not maxConcurrency, bound the shards at once.

Two shard workflows, each taking 50 x 5 ms, 16 shards at once: `batch`, one tool call
for the batch that handles its items one after the other (Step Functions' Distributed
Map pattern: a child execution, one invocation, a batch); and `each`, a parallel step
with a tool.call step an item (maxConcurrency 1): a step an item, so its floor is the
runtime's CPU per step (docs/performance.md), which 16 shards on one event loop share.
`--memory`: the peak RSS of `lwtool run` over 100 MB of items (issue 66's bound), the
data dir it leaves and the parent's log.
Run: .venv/bin/python bench/map.py [--items N] [--url postgresql://postgres@127.0.0.1]
[--memory]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

NAP_S = 0.005
BATCH = 50
WIDTH = 16
TOOLS = '''import asyncio

async def nap(args):
    await asyncio.sleep(0.005)
    return {"id": args["id"]}

async def nap_batch(args):
    done = []
    for item in args["items"]:
        await asyncio.sleep(0.005)
        done.append({"id": item["id"]})
    return done

tools = {"nap": nap, "nap_batch": nap_batch}
'''
BATCH_SHARD = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
               "metadata": {"name": "nap-batch"}, "permissions": {"tools": ["nap_batch"]},
               "steps": [{"id": "naps", "uses": "tool.call",
                          "with": {"tool": "nap_batch", "args": "{{ input }}"}}]}
EACH_SHARD = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
         "metadata": {"name": "nap-each"}, "permissions": {"tools": ["nap"]},
         "steps": [{"id": "each", "uses": "parallel", "with": {
             "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxBranches": 100,
             "maxConcurrency": 1, "failureMode": "fail_fast",
             "fanIn": {"order": "input", "output": "array"}},
             "steps": [{"id": "nap", "uses": "tool.call",
                        "with": {"tool": "nap", "args": "{{ item }}"}}]}]}


SHARDS = {"batch": BATCH_SHARD, "each": EACH_SHARD}


def _files(folder: Path, items: int, shard: str = "batch") -> None:
    (folder / "shard.lwir.json").write_text(json.dumps(SHARDS[shard]))
    (folder / "tools.py").write_text(TOOLS)
    (folder / "flow.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "nap-all"}, "permissions": {"tools": ["nap", "nap_batch"]},
        "steps": [{"id": "all", "uses": "map", "with": {
            "items": "{{ input.items }}", "itemKey": "{{ item.id }}",
            "workflow": "./shard.lwir.json", "batch": {"maxItems": BATCH},
            "maxConcurrency": WIDTH}}]}))
    (folder / "in.json").write_text(json.dumps({"items": [{"id": i} for i in range(items)]}))


def local(items: int, shard: str = "batch") -> tuple[float, int]:
    """Seconds of the map in the local world (strict durability), the parent's events."""
    from lwtool import local_world, run_workflow
    from lwtool.runtime.event_loop import new_event_loop
    from lwtool.tools import load_tools

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _files(folder, items, shard)
        os.chdir(folder)
        world = local_world(folder / "d")
        run_input = json.loads((folder / "in.json").read_text())
        started = time.perf_counter()
        with asyncio.Runner(loop_factory=new_event_loop) as runner:
            result = runner.run(run_workflow("flow.lwir.json", run_input, world=world,
                                             tools=load_tools("tools.py:tools"), run_id="m"))
        took = time.perf_counter() - started
        assert result["status"] == "completed"
        return took, len(world.events("m"))


def postgres(url: str, items: int, workers: int, shard: str = "batch",
             slots: int = WIDTH) -> tuple[float, float]:
    """Seconds from enqueue to the run's end with `workers` worker processes (`slots`
    shards at once each, besides the parent's), and their CPU seconds."""
    from tests.fixtures.postgres import database

    with tempfile.TemporaryDirectory() as tmp, database(url) as db:
        folder = Path(tmp)
        _files(folder, items, shard)
        lwtool = [sys.executable, "-m", "lwtool"]
        subprocess.run([*lwtool, "run", "flow.lwir.json", "-i", "in.json", "--enqueue",
                        "--run-id", "m", "--world", db], cwd=folder, check=True,
                       capture_output=True)
        started = time.perf_counter()
        procs = [subprocess.Popen([*lwtool, "worker", "--world", db, "--tools",
                                   "tools.py:tools", "--data-dir", "data", "--drain",
                                   "--concurrency", str(slots + 1)], cwd=folder,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(workers)]
        cpu = 0.0
        for proc in procs:
            _, status, usage = os.wait4(proc.pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            cpu += usage.ru_utime + usage.ru_stime
        return time.perf_counter() - started, cpu


COUNT_TOOLS = """import json

def load(args):
    with open(args['path']) as lines:
        return [json.loads(line) for line in lines]

def count(args):
    return {'n': len(args['items'])}

tools = {'load': load, 'count': count}
"""


def memory(items: int, batch: int = 1000, pad: int = 1000) -> dict[str, float]:
    """Peak RSS of `lwtool run` (a process of its own, from wait4) over `items` items of
    ~`pad` bytes each in batches of `batch` (a shard counts its items), the input's
    size, the data dir's and the parent's log length."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "tools.py").write_text(COUNT_TOOLS)
        (folder / "shard.lwir.json").write_text(json.dumps({
            **BATCH_SHARD, "permissions": {"tools": ["count"]}, "steps": [{
                "id": "count", "uses": "tool.call",
                "with": {"tool": "count", "args": "{{ input }}"}}]}))
        (folder / "flow.lwir.json").write_text(json.dumps({
            "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "count-all"}, "permissions": {"tools": ["load", "count"]},
            "steps": [{"id": "load", "uses": "tool.call",
                       "with": {"tool": "load", "args": {"path": "items.jsonl"}}},
                      {"id": "all", "uses": "map", "needs": ["load"], "with": {
                "items": "{{ steps.load.output }}", "itemKey": "{{ item.id }}",
                "workflow": "./shard.lwir.json", "batch": {"maxItems": batch},
                "maxConcurrency": 8}}]}))
        with (folder / "items.jsonl").open("w") as out:  # a JSON-lines file, read by a step
            out.writelines(json.dumps({"id": i, "text": "x" * pad}) + "\n"
                           for i in range(items))
        (folder / "in.json").write_text("{}")
        proc = subprocess.Popen([sys.executable, "-m", "lwtool", "run", "flow.lwir.json",
                                 "-i", "in.json", "--tools", "tools.py:tools", "--data-dir",
                                 "d", "--run-id", "m", "-q"], cwd=folder,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert proc.stderr is not None
        said = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, said
        events = subprocess.run([sys.executable, "-m", "lwtool", "events", "m", "--json",
                                 "--data-dir", "d"], cwd=folder, capture_output=True,
                                text=True, check=True).stdout.count("\n")
        stored = sum(f.stat().st_size for f in (folder / "d").rglob("*") if f.is_file())
        return {"input": (folder / "items.jsonl").stat().st_size / 1e6,
                "rss": usage.ru_maxrss / 1024, "stored": stored / 1e6, "events": events}


def print_memory() -> None:
    small, large = memory(100, 10), memory(100_000)
    print(f"memory: `lwtool run` of a map over {large['input']:.0f} MB of items (100,000 "
          f"items, batches of 1,000): peak RSS {large['rss']:.0f} MB, against "
          f"{small['rss']:.0f} MB over 100 items; the parent's log {large['events']:.0f} "
          f"events; the data dir {large['stored']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--url", default=None)
    parser.add_argument("--memory", action="store_true",
                        help="also the peak RSS of a map over 100 MB of items")
    args = parser.parse_args()
    ideal = args.items * NAP_S / WIDTH
    shards = -(-args.items // BATCH)
    print(f"map of {args.items:,} items x {NAP_S * 1000:g} ms, batches of {BATCH} "
          f"({shards} shards), {WIDTH} at once: ideal {ideal:.3f} s")
    for shard in SHARDS:
        took, events = local(args.items, shard)
        print(f"local world, shard `{shard}`: {took:.3f} s = {took / ideal:.3f}x the ideal "
              f"(goal <= 1.25x); the parent's log: {events} events for {shards} shards")
    if args.memory:
        print_memory()
    if args.url:
        for shard in SHARDS:
            results: dict[int, Any] = {}
            for workers in (1, 2):
                wall, cpu = postgres(args.url, args.items, workers, shard)
                results[workers] = wall
                print(f"PostgreSQL, shard `{shard}`, {workers} worker"
                      f"{'s' if workers > 1 else ''}: {wall:.3f} s = {wall / ideal:.3f}x the "
                      f"ideal (goal, 1 worker: <= 1.5x); worker CPU "
                      f"{cpu * 1000 / args.items:.3f} ms an item (goal <= 0.3 ms)")
            print(f"shard `{shard}`: 2 workers against 1: {results[1] / results[2]:.2f}x "
                  f"(goal >= 1.6x where each has a core; this machine has "
                  f"{os.cpu_count()}; maxConcurrency holds any number of workers to the "
                  f"ideal: at most {results[1] / ideal:.2f}x here)")
        # Where one worker's slots, not the map's maxConcurrency, bound the shards at
        # once, a second worker is what adds them: the scaling a deployment sees.
        half = WIDTH // 2
        one, _ = postgres(args.url, args.items, 1, "batch", half)
        two, _ = postgres(args.url, args.items, 2, "batch", half)
        print(f"PostgreSQL, shard `batch`, workers of {half} shard slots each: 1 worker "
              f"{one:.3f} s (ideal {ideal * 2:.3f} s), 2 workers {two:.3f} s (ideal "
              f"{ideal:.3f} s): 2 workers against 1: {one / two:.2f}x (goal >= 1.6x)")


if __name__ == "__main__":
    main()

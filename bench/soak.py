"""Durability soak: kill real `lwtool run` processes at random points, resume them, and
count what went wrong. Prints the figures; exits 1 when any failure count is not 0.

Each trial runs one workflow (a chain, a parallel fan-out, multi-step parallel
branches, a diamond, a loop, a loop with steps after its exit) with the side-effect
tools of tests/runtime, and stops it 1-4 times before letting it finish: SIGKILL at a
random moment (most), SIGKILL right after a random StepCompleted commit
(LWTOOL_FAULT_KILL_AFTER), SIGTERM or SIGINT at a random moment. Every attempt is
`lwtool run --run-id R` (it starts the run, or resumes it once it exists). After each
stop the event log and the side-effect counter are snapshotted; at the end:

- lost committed events: a snapshot's events are not a prefix of the final log;
- committed steps re-run: a tool call for a step that was committed at a stop happened
  again after that stop;
- wrong outputs: the finished run's output differs from an uninterrupted run's;
- damaged stores: `lwtool verify` (in-process) finds anything damaged;
- tracebacks: any process printed one.

Trials alternate between the durability modes (`--durability both`, the default), or
all run in one.

Run: .venv/bin/python bench/soak.py [--kills 1000] [--jobs 2] [--seed 1]
     [--durability strict|process|both]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lwtool.world.base import RunNotFound  # noqa: E402
from lwtool.world.local import LocalWorld  # noqa: E402
from lwtool.world.verify import verify  # noqa: E402

RUNTIME = ROOT / "tests" / "runtime"
TOOLS = f"{RUNTIME / 'side_effects.py'}:tools"
SLEEP = "0.02"  # seconds per tool call, so that stops land inside runs
KINDS = ("kill", "after-commit", "term", "int")
ITEMS = [{"id": f"i{n}", "n": n} for n in range(5)]
SCENARIOS: dict[str, tuple[str, Any]] = {
    "chain": ("chain.lwir.yaml", {"seed": "s"}),
    "fanout": ("fanout.lwir.yaml", {"items": ITEMS}),
    "branches": ("branches.lwir.yaml", {"items": ITEMS[:4]}),
    "diamond": ("diamond.lwir.yaml", {"n": 1}),
    "loop": ("loop.lwir.yaml", {"text": "go"}),
    "loop-exit": ("loop-exit.lwir.yaml", {"text": "go"}),
}


def call_key(payload: dict[str, Any]) -> str | None:
    """The side-effect counter's key of the tool call a StepCompleted records (None for
    decisions and parallel groups, which call no tool)."""
    if payload.get("uses") != "tool.call":
        return None
    step, output = payload["stepId"], payload["envelope"].get("output") or {}
    if "key" in output:
        return f"record:{output['key']}"
    if "double" in output:
        return f"work:{output['id']}"
    if step == "improve":
        return f"improve:improve-{output['text'].count('!')}"
    if step == "check":
        return f"check:check-{output['text'].count('!')}"
    return f"{step}:{step}"


@dataclass
class Figures:
    kills: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    lost_events: int = 0
    rerun_steps: int = 0
    wrong_outputs: int = 0
    damaged: int = 0
    tracebacks: int = 0
    repeated_in_flight: int = 0
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Stop:
    events: list[tuple[Any, ...]]
    calls: Counter[str]


def _events(data: Path, run_id: str) -> list[tuple[Any, ...]]:
    if not (data / "events" / "events.db").exists():
        return []
    world = LocalWorld(data)
    try:
        return [(e.seq, e.type, e.step_path, json.dumps(e.payload, sort_keys=True), e.at)
                for e in world.events(run_id)]
    except RunNotFound:
        return []
    finally:
        world.close()


def _calls(work: Path) -> Counter[str]:
    log = work / "calls.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


class Soak:
    def __init__(self, root: Path, seed: int, modes: tuple[str, ...]) -> None:
        self.root = root
        self.seed = seed
        self.modes = modes
        self.figures = Figures()
        self.reference: dict[str, tuple[Any, float]] = {}

    def command(self, work: Path, scenario: str, run_id: str,
                durability: str = "strict") -> list[str]:
        workflow, run_input = SCENARIOS[scenario]
        (work / "input.json").write_text(json.dumps(run_input))
        return [sys.executable, "-m", "lwtool", "run", str(RUNTIME / "workflows" / workflow),
                "--input", str(work / "input.json"), "--tools", TOOLS, "--data-dir",
                str(work / "data"), "--run-id", run_id, "--durability", durability, "--json"]

    def env(self, work: Path, **extra: str) -> dict[str, str]:
        return {**os.environ, "LWTOOL_TEST_DIR": str(work), "LWTOOL_TEST_SLEEP": SLEEP,
                "PYTHONPATH": str(ROOT), **extra}

    def prepare(self) -> None:
        """One uninterrupted run per scenario: its output and its wall time."""
        for scenario in SCENARIOS:
            work = self.root / f"reference-{scenario}"
            work.mkdir()
            started = time.perf_counter()
            done = subprocess.run(self.command(work, scenario, "ref"), env=self.env(work),
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise SystemExit(f"reference run of {scenario} failed: {done.stderr}")
            self.reference[scenario] = (json.loads(done.stdout)["output"],
                                        time.perf_counter() - started)

    def trial(self, number: int, stops: int) -> None:
        rng = random.Random(self.seed * 100_003 + number)
        scenario = rng.choice(sorted(SCENARIOS))
        mode = self.modes[number % len(self.modes)]
        expected, wall = self.reference[scenario]
        work = self.root / f"trial-{number}"
        work.mkdir()
        run_id = f"soak_{number}"
        snapshots: list[Stop] = []
        outputs: list[str] = []
        kinds: Counter[str] = Counter()
        final: subprocess.CompletedProcess[str] | None = None
        while final is None:
            if len(snapshots) >= stops:
                final = subprocess.run(self.command(work, scenario, run_id, mode),
                                       env=self.env(work), capture_output=True, text=True,
                                       timeout=300)
                outputs.append(final.stderr)
                break
            kind = rng.choices(["kill", "after-commit", "term", "int"], [80, 10, 5, 5])[0]
            extra = {}
            if kind == "after-commit":
                extra["LWTOOL_FAULT_KILL_AFTER"] = f"StepCompleted@*#{rng.randint(1, 8)}"
            proc = subprocess.Popen(self.command(work, scenario, run_id, mode),
                                    env=self.env(work, **extra), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            if kind != "after-commit":
                time.sleep(rng.uniform(0.05, wall))
                proc.send_signal({"kill": signal.SIGKILL, "term": signal.SIGTERM,
                                  "int": signal.SIGINT}[kind])
            out, err = proc.communicate(timeout=300)
            outputs.append(err)
            if proc.returncode == 0:  # it finished before the stop landed
                final = subprocess.CompletedProcess(proc.args, 0, out, err)
                break
            if proc.returncode not in (-9, -15, -2, 130, 143):
                self.problem(f"trial {number} ({scenario}): {kind} ended with "
                             f"{proc.returncode}: {err.strip()[-300:]}")
            kinds[kind] += 1
            kinds[mode] += 1
            snapshots.append(Stop(_events(work / "data", run_id), _calls(work)))
        self.check(number, scenario, work, run_id, expected, final, snapshots, outputs, kinds)

    def check(self, number: int, scenario: str, work: Path, run_id: str, expected: Any,
              final: subprocess.CompletedProcess[str], snapshots: list[Stop],
              outputs: list[str], kinds: Counter[str]) -> None:
        label = f"trial {number} ({scenario})"
        lost = rerun = wrong = damaged = repeated = 0
        if final.returncode != 0 or json.loads(final.stdout)["output"] != expected:
            wrong = 1
            self.problem(f"{label}: final run {final.returncode}: {final.stdout[-300:]} "
                         f"{final.stderr[-300:]}")
        events = _events(work / "data", run_id)
        calls = _calls(work)
        for n, stop in enumerate(snapshots):
            if events[:len(stop.events)] != stop.events:
                lost += 1
                self.problem(f"{label}: the log at stop {n} is not a prefix of the final log")
            committed = {call_key(json.loads(e[3])) for e in stop.events
                         if e[1] == "StepCompleted"} - {None}
            for key in sorted(k for k in committed if k is not None):
                if calls[key] != stop.calls[key]:
                    rerun += 1
                    self.problem(f"{label}: {key} was committed at stop {n} and ran again")
        repeated = sum(count - 1 for count in calls.values() if count > 1)
        world = LocalWorld(work / "data")
        try:
            result = verify(world)
        finally:
            world.close()
        if result.damaged:
            damaged = 1
            self.problem(f"{label}: verify: {[p.message for p in result.problems]}")
        tracebacks = sum("Traceback" in err for err in outputs)
        if tracebacks:
            self.problem(f"{label}: traceback: {[e for e in outputs if 'Traceback' in e][0]}")
        with self.figures.lock:
            f = self.figures
            f.kills.update(kinds)
            f.runs += 1
            f.lost_events += lost
            f.rerun_steps += rerun
            f.wrong_outputs += wrong
            f.damaged += damaged
            f.tracebacks += tracebacks
            f.repeated_in_flight += repeated

    def problem(self, message: str) -> None:
        with self.figures.lock:
            self.figures.problems.append(message)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=1000, help="stops to make in all")
    parser.add_argument("--jobs", type=int, default=2, help="trials at once")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--durability", choices=("strict", "process", "both"),
                        default="both", help="the runs' mode (both: trials alternate)")
    args = parser.parse_args()
    modes = ("strict", "process") if args.durability == "both" else (args.durability,)
    # Children inherit an ignored SIGINT (a background job's), and then ignore Ctrl-C:
    # give them the default, so the SIGINT stops really land.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lwtool-soak-") as folder:
        soak = Soak(Path(folder), args.seed, modes)
        soak.prepare()
        rng = random.Random(args.seed)
        number = 0
        with ThreadPoolExecutor(args.jobs) as pool:
            running: set[Future[None]] = set()
            while True:  # trials until the stops made reach --kills
                made = sum(soak.figures.kills[k] for k in KINDS)
                while len(running) < args.jobs and made < args.kills:
                    running.add(pool.submit(soak.trial, number, rng.randint(1, 4)))
                    number += 1
                if not running:
                    break
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    future.result()
    f = soak.figures
    stops = sum(f.kills[k] for k in KINDS)
    print(f"soak: {stops} stops ({f.kills['kill']} SIGKILL at a random moment, "
          f"{f.kills['after-commit']} SIGKILL right after a commit, {f.kills['term']} "
          f"SIGTERM, {f.kills['int']} SIGINT) over {f.runs} runs of {len(SCENARIOS)} "
          f"workflows in {time.perf_counter() - started:.0f} s; durability: "
          + ", ".join(f"{m} {f.kills[m]} stops" for m in modes))
    print(f"lost committed events: {f.lost_events}")
    print(f"committed steps re-run: {f.rerun_steps}")
    print(f"outputs different from the uninterrupted run: {f.wrong_outputs}")
    print(f"damaged stores (verify): {f.damaged}")
    print(f"tracebacks: {f.tracebacks}")
    print(f"in-flight tool calls repeated (at-least-once, expected): {f.repeated_in_flight}")
    for problem in f.problems[:20]:
        print(f"  problem: {problem}")
    failed = f.lost_events + f.rerun_steps + f.wrong_outputs + f.damaged + f.tracebacks
    return 1 if failed or f.problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

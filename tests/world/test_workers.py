"""Workers on a real PostgreSQL: `lwtool run --enqueue` queues runs, `lwtool worker`
processes share them with each step executed exactly once; a worker SIGKILLed mid-step
leaves its run to a replacement once its lease runs out, and the run completes with no
committed step run again (only the one in flight) and an uninterrupted run's output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli

TOOLS = f"{Path(__file__).parent / 'worker_tools.py'}:tools"
STEPS = 15
pytestmark = pytest.mark.slow


def _chain(path: Path) -> None:
    steps = [{"id": f"s{i}", "uses": "tool.call", **({"needs": [f"s{i - 1}"]} if i else {}),
              "with": {"tool": "mark", "args": {
                  "run": "{{ input.run }}", "step": f"s{i}",
                  "value": f"{{{{ steps.s{i - 1}.output.value }}}}" if i else "v"}}}
             for i in range(STEPS)]
    path.write_text(json.dumps({"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
                                "metadata": {"name": "marks"},
                                "permissions": {"tools": ["mark"]}, "steps": steps}))


def _enqueue(work: Path, url: str, runs: int) -> None:
    _chain(work / "marks.lwir.json")
    for n in range(runs):
        (work / "in.json").write_text(json.dumps({"run": f"r{n:02d}"}))
        done = run_cli("run", str(work / "marks.lwir.json"), "-i", str(work / "in.json"),
                       "--enqueue", "--run-id", f"r{n:02d}", "--world", url)
        assert done.returncode == 0 and done.stdout.strip() == f"r{n:02d}", done.stderr


def _worker(work: Path, url: str, *extra: str, **env: str) -> subprocess.Popen[str]:
    """A draining worker with the test's tools (or the `--tools` in `extra`)."""
    tools = [] if "--tools" in extra else ["--tools", TOOLS]
    return subprocess.Popen(
        [sys.executable, "-m", "lwtool", "worker", "--world", url, *tools,
         "--data-dir", str(work / "data"), "--drain", "-v", *extra], cwd=ROOT,
        env={**os.environ, "LWTOOL_TEST_DIR": str(work), **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _marks(work: Path) -> Counter[str]:
    return Counter((work / "marks.log").read_text().split())


def _outputs(url: str, runs: int) -> dict[str, Any]:
    rows = json.loads(run_cli("runs", "--world", url, "--json").stdout)
    assert [r["status"] for r in rows] == ["completed"] * runs, rows
    return {r["runId"]: json.loads(run_cli("replay", r["runId"], "--world", url, "--json",
                                           "--tools", TOOLS).stdout)["output"]
            for r in rows}


EXPECTED = {"value": "v-" + "-".join(f"s{i}" for i in range(STEPS))}


def test_three_workers_share_three_hundred_steps_each_once(tmp_path: Path,
                                                            postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, 20)
    workers = [_worker(tmp_path, postgres_url, "--concurrency", "3") for _ in range(3)]
    logs = [w.communicate(timeout=240) for w in workers]
    assert all(w.returncode == 0 for w in workers), [err for _, err in logs]
    marks = _marks(tmp_path)
    assert len(marks) == 300 and set(marks.values()) == {1}  # every step exactly once
    claimed = [err.count("claimed run") for _, err in logs]
    assert sum(claimed) == 20 and sum(1 for c in claimed if c) >= 2  # shared out
    assert all(out == EXPECTED for out in _outputs(postgres_url, 20).values())


def test_a_killed_workers_run_is_finished_by_another(tmp_path: Path,
                                                     postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, 6)
    # one run at a time: r03's s7 is the only step in flight when the worker dies
    doomed = _worker(tmp_path, postgres_url, "--lease-seconds", "2", "--concurrency", "1",
                     LWTOOL_TEST_BLOCK="r03:s7")
    deadline = time.monotonic() + 120
    while not (tmp_path / "blocked").exists():
        assert doomed.poll() is None, doomed.stderr.read() if doomed.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    held = run_cli("runs", "--world", postgres_url).stdout
    assert any(line.split()[:2] == ["r03", "running"] and "held by" in line
               for line in held.splitlines()), held
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    replacements = [_worker(tmp_path, postgres_url, "--lease-seconds", "2")
                    for _ in range(2)]
    logs = [w.communicate(timeout=240) for w in replacements]
    assert all(w.returncode == 0 for w in replacements), [err for _, err in logs]
    marks = _marks(tmp_path)
    assert len(marks) == 6 * STEPS
    assert {k: v for k, v in marks.items() if v != 1} == {"r03:s7": 2}  # in flight only
    assert all(out == EXPECTED for out in _outputs(postgres_url, 6).values())


def test_enqueue_and_worker_say_what_they_need(tmp_path: Path, postgres_url: str) -> None:
    _chain(tmp_path / "marks.lwir.json")
    (tmp_path / "in.json").write_text('{"run": "x"}')
    local = run_cli("run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "in.json"),
                    "--enqueue", "--data-dir", str(tmp_path / "data"))
    assert local.returncode == 2 and "--enqueue needs a PostgreSQL world" in local.stderr
    idle = run_cli("worker", "--data-dir", str(tmp_path / "data"), "--drain")
    assert idle.returncode == 2 and "lwtool worker needs a PostgreSQL world" in idle.stderr
    definition = tmp_path / "d.definition.yaml"
    definition.write_text("apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\n"
                          "id: d\nmodels: [{id: m, model: offline}]\nplanner: {model: m}\n")
    unplanned = run_cli("run", str(definition), "-i", str(tmp_path / "in.json"), "--enqueue",
                        "--world", postgres_url)
    assert unplanned.returncode == 2 and "has no fixed plan: plan it first" in unplanned.stderr
    args = ["run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "in.json"),
            "--enqueue", "--run-id", "twice", "--world", postgres_url]
    assert run_cli(*args).returncode == 0
    again = run_cli(*args)
    assert again.returncode == 2 and "run twice is queued already" in again.stderr


def test_a_run_holding_its_loop_does_not_hold_up_the_workers_other_runs(
        tmp_path: Path, postgres_url: str) -> None:
    """Each run a worker claims executes on an event loop (and thread) of its own: while
    run h's only step holds its loop for 3 s, run q, claimed by the same worker, runs
    all its 15 steps to its end (on one shared loop it waited for the hold to end)."""
    held = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "held"}, "permissions": {"tools": ["hold"]},
            "steps": [{"id": "held", "uses": "tool.call", "with": {
                "tool": "hold", "args": {"seconds": 3}}}]}
    (tmp_path / "held.lwir.json").write_text(json.dumps(held))
    assert run_cli("run", str(tmp_path / "held.lwir.json"), "-i", "-", "--enqueue",
                   "--run-id", "h", "--world", postgres_url, stdin="{}").returncode == 0
    _chain(tmp_path / "marks.lwir.json")
    (tmp_path / "in.json").write_text('{"run": "q"}')
    assert run_cli("run", str(tmp_path / "marks.lwir.json"), "-i", str(tmp_path / "in.json"),
                   "--enqueue", "--run-id", "q", "--world", postgres_url).returncode == 0
    worker = _worker(tmp_path, postgres_url, "--concurrency", "2", "--tools",
                     TOOLS.replace(":tools", ":loop_tools"))
    _, log = worker.communicate(timeout=120)
    assert worker.returncode == 0 and "run h completed" in log and "run q completed" in log, log
    hold_start, hold_end = map(float, (tmp_path / "held.log").read_text().split())
    events = [json.loads(line) for line in run_cli(
        "events", "q", "--world", postgres_url, "--json").stdout.splitlines()]
    steps = [e["at"] for e in events if e["type"] == "StepCompleted"]
    end = next(e["at"] for e in events if e["type"] == "RunCompleted")
    # q went on while h held its loop (the two are claimed at once: q's first step may
    # come a moment before the hold starts, its last comes after it and its end before
    # the hold ends)
    assert len(steps) == STEPS and hold_start < steps[-1] and end < hold_end, \
        (hold_start, steps[0], steps[-1], end, hold_end, log)
    assert _marks(tmp_path) == {f"q:s{i}": 1 for i in range(STEPS)}


def test_a_loop_held_up_does_not_let_the_lease_run_out(tmp_path: Path,
                                                        postgres_url: str) -> None:
    """A step holds up its run's event loop for 2.5 leases: its heartbeat, in a
    thread of its own, keeps the claim, so a second worker never takes the run (which
    would hand it back and have the first one's run cancelled and its step run again)."""
    flow = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "held"}, "permissions": {"tools": ["mark", "hold"]},
            "steps": [
                {"id": "s0", "uses": "tool.call", "with": {"tool": "mark", "args": {
                    "run": "h", "step": "s0", "value": "v"}}},
                {"id": "held", "uses": "tool.call", "needs": ["s0"], "with": {
                    "tool": "hold", "args": {"seconds": 5}}},
                {"id": "s1", "uses": "tool.call", "needs": ["held"], "with": {
                    "tool": "mark", "args": {"run": "h", "step": "s1", "value": "w"}}}]}
    (tmp_path / "held.lwir.json").write_text(json.dumps(flow))
    assert run_cli("run", str(tmp_path / "held.lwir.json"), "-i", "-", "--enqueue",
                   "--run-id", "h", "--world", postgres_url, stdin="{}").returncode == 0
    tools = TOOLS.replace(":tools", ":loop_tools")
    first = _worker(tmp_path, postgres_url, "--lease-seconds", "2", "--tools", tools)
    deadline = time.monotonic() + 60
    while not (tmp_path / "marks.log").exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    second = _worker(tmp_path, postgres_url, "--lease-seconds", "2", "--tools", tools)
    logs = [w.communicate(timeout=120)[1] for w in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], logs
    assert "claimed run h (claim 1)" in logs[0] and "run h completed" in logs[0], logs
    assert "lease" not in logs[0] and "claimed" not in logs[1], logs
    assert _marks(tmp_path) == {"h:s0": 1, "h:s1": 1}


def test_a_worker_claims_only_runs_whose_tools_it_has(tmp_path: Path,
                                                       postgres_url: str) -> None:
    """A worker started without a run's tools leaves the run queued (it failed every
    queued run, unrecoverably, before), `lwtool runs` says what the run waits for, and
    a worker with the tools finishes it."""
    _enqueue(tmp_path, postgres_url, 2)
    bare = subprocess.run([sys.executable, "-m", "lwtool", "worker", "--world", postgres_url,
                           "--data-dir", str(tmp_path / "data"), "--drain", "-v"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert bare.returncode == 0 and "claimed" not in bare.stderr, bare.stderr
    listed = run_cli("runs", "--world", postgres_url).stdout.splitlines()
    assert [line.split() for line in listed[1:]] == [
        ["r00", "queued", "for", "a", "worker", "with", "tool", "mark"],
        ["r01", "queued", "for", "a", "worker", "with", "tool", "mark"]], listed
    rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert [r.get("needs") for r in rows] == [["mark"], ["mark"]]
    worker = _worker(tmp_path, postgres_url)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert all(out == EXPECTED for out in _outputs(postgres_url, 2).values())


def test_a_dead_workers_run_is_seen_and_taken_over_at_once(tmp_path: Path,
                                                           postgres_url: str) -> None:
    """The run lock tells: a worker SIGKILLed under a 60 s lease leaves its run shown
    `interrupted` at once, and a live worker takes it over within seconds, not after
    the lease."""
    _enqueue(tmp_path, postgres_url, 1)
    doomed = _worker(tmp_path, postgres_url, "--lease-seconds", "60",
                     LWTOOL_TEST_BLOCK="r00:s3")
    deadline = time.monotonic() + 60
    while not (tmp_path / "blocked").exists():
        assert doomed.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(3.5)  # past the grace a young claim has to take its lock (GRACE)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    died = time.monotonic()
    listed = run_cli("runs", "--world", postgres_url).stdout
    assert listed.splitlines()[1].split()[:2] == ["r00", "interrupted"], listed
    assert "r00 was interrupted (its worker died); a live worker takes it over" in listed
    replacement = _worker(tmp_path, postgres_url, "--lease-seconds", "60")
    _, err = replacement.communicate(timeout=120)
    assert replacement.returncode == 0, err
    assert time.monotonic() - died < 20  # the 60 s lease was not waited out
    assert _outputs(postgres_url, 1) == {"r00": EXPECTED}
    assert {k: v for k, v in _marks(tmp_path).items() if v != 1} == {"r00:s3": 2}


def test_the_claims_lock_key_is_the_worlds(postgres_url: str, tmp_path: Path) -> None:
    """The claim computes a run's advisory lock key in SQL; it must be the one the
    world locks (lwtool.world.postgres.advisory_key)."""
    from lwtool.world.postgres import PostgresWorld
    from lwtool.world.postgres_keys import advisory_key
    from lwtool.world.postgres_queue import RUN_LOCK_KEY

    world = PostgresWorld(postgres_url, tmp_path)
    try:
        for run_id in ("r00", "run_019aeb5e2f1c4d0a1b2c", "p.sub.1.0", "ü-x"):
            got = world._read(f"SELECT {RUN_LOCK_KEY} FROM (SELECT %s AS run_id) AS r",
                              (run_id,))
            assert got[0][0] == advisory_key(f"lwtool-run:{run_id}")
    finally:
        world.close()


def test_a_batch_is_queued_in_one_transaction_or_not_at_all(tmp_path: Path,
                                                            postgres_url: str) -> None:
    """`--enqueue --inputs FILE.jsonl`: one run a line, all queued or none; a line its
    schema refuses is named (exit 1) and nothing is queued."""
    _chain(tmp_path / "marks.lwir.json")
    flow = json.loads((tmp_path / "marks.lwir.json").read_text())
    flow["input"] = {"schema": {"type": "object", "required": ["run"],
                                "properties": {"run": {"type": "string"}}}}
    (tmp_path / "marks.lwir.json").write_text(json.dumps(flow))
    args = ["run", str(tmp_path / "marks.lwir.json"), "--enqueue", "--world", postgres_url]
    (tmp_path / "bad.jsonl").write_text('{"run": "a"}\n\n{"run": 7}\n')
    refused = run_cli(*args, "--inputs", str(tmp_path / "bad.jsonl"))
    assert refused.returncode == 1
    assert refused.stderr == (f"lwtool: {tmp_path / 'bad.jsonl'}:3: the input at /run: 7 is "
                              'not of type "string"; nothing was queued\n')
    (tmp_path / "broken.jsonl").write_text('{"run": "a"}\n{"run": \n')
    broken = run_cli(*args, "--inputs", str(tmp_path / "broken.jsonl"))
    assert broken.returncode == 1 and f"{tmp_path / 'broken.jsonl'}:2: " in broken.stderr
    assert run_cli("runs", "--world", postgres_url).stdout.strip() == "no runs"
    both = run_cli(*args, "--inputs", str(tmp_path / "bad.jsonl"), "--input", "x.json")
    assert both.returncode == 2 and "drop --input and --run-id" in both.stderr
    alone = run_cli("run", str(tmp_path / "marks.lwir.json"), "--inputs", "x.jsonl")
    assert alone.returncode == 2 and "it needs --enqueue" in alone.stderr
    (tmp_path / "empty.jsonl").write_text("\n\n")
    empty = run_cli(*args, "--inputs", str(tmp_path / "empty.jsonl"))
    assert empty.returncode == 2 and "holds no input (one JSON value a line)" in empty.stderr
    missing = run_cli(*args, "--inputs", str(tmp_path / "nowhere.jsonl"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    no_input = run_cli("run", str(tmp_path / "marks.lwir.json"), "--world", postgres_url)
    assert no_input.returncode == 2 and "--input FILE (or -) is needed" in no_input.stderr
    (tmp_path / "good.jsonl").write_text("".join(f'{{"run": "b{n}"}}\n' for n in range(3)))
    queued = run_cli(*args, "--inputs", str(tmp_path / "good.jsonl"))
    assert queued.returncode == 0, queued.stderr
    ids = queued.stdout.split()
    assert len(ids) == 3 and "lwtool: 3 runs queued" in queued.stderr
    worker = _worker(tmp_path, postgres_url)
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    outputs = _outputs(postgres_url, 3)
    assert sorted(outputs) == sorted(ids)
    assert all(out == EXPECTED for out in outputs.values())

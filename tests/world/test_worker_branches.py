"""Parallel branches of one run spread over `lwtool worker` processes (a real PostgreSQL):
each branch step executes exactly once, the fan-in equals an in-process run's; a worker
SIGKILLed inside a branch (and owning the run) leaves both to the others, and only the
step in flight runs again (at once: the dead worker's lock tells, not its lease); a
failing branch fails the run as it fails in one process."""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from tests.world.test_workers import TOOLS, _marks, _worker

pytestmark = pytest.mark.slow
ITEMS = 12


def _fan(path: Path) -> None:
    mark = {"tool": "mark", "args": {"run": "{{ input.run }}"}}

    def call(step: str, value: str, **more: Any) -> dict[str, Any]:
        return {**mark, "args": {**mark["args"], "step": step, "value": value, **more}}

    path.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "fan"}, "permissions": {"tools": ["mark"]},
        "steps": [
            {"id": "prep", "uses": "tool.call", "with": call("prep", "p")},
            {"id": "fan", "uses": "parallel", "needs": ["prep"],
             "with": {"items": "{{ input.items }}", "maxBranches": 50, "maxConcurrency": 8,
                      "failureMode": "fail_fast"},
             "steps": [
                 {"id": "a", "uses": "tool.call",
                  "with": call("fan{{ item }}.a", "{{ item }}", failOn="{{ input.failOn }}")},
                 {"id": "b", "uses": "tool.call", "needs": ["a"],
                  "with": call("fan{{ item }}.b", "{{ steps.a.output.value }}")}]},
            {"id": "join", "uses": "tool.call", "needs": ["fan"],
             "with": call("join", "{{ steps.fan.output[11].value }}")}]}))


def _enqueue(work: Path, url: str, runs: int, fail_on: int = -1) -> None:
    _fan(work / "fan.lwir.json")
    for n in range(runs):
        (work / "in.json").write_text(json.dumps({"run": f"r{n:02d}", "items": list(range(ITEMS)),
                                                  "failOn": fail_on}))
        done = run_cli("run", str(work / "fan.lwir.json"), "-i", str(work / "in.json"),
                       "--enqueue", "--run-id", f"r{n:02d}", "--world", url)
        assert done.returncode == 0, done.stderr


def _in_process(work: Path, run: str, fail_on: int = -1) -> Any:
    """The same run executed by `lwtool run` in one process, in a local world."""
    local = work / "local"
    local.mkdir(exist_ok=True)
    (local / "in.json").write_text(json.dumps({"run": run, "items": list(range(ITEMS)),
                                               "failOn": fail_on}))
    done = run_cli("run", str(work / "fan.lwir.json"), "-i", str(local / "in.json"), "--json",
                   "--tools", TOOLS, "--data-dir", str(local / "data"),
                   env={"LWTOOL_TEST_DIR": str(local)})
    return json.loads(done.stdout)


def _who(work: Path) -> dict[str, set[str]]:
    """step label -> process ids that executed it."""
    out: dict[str, set[str]] = {}
    for line in (work / "who.log").read_text().splitlines():
        label, pid = line.split()
        out.setdefault(label, set()).add(pid)
    return out


def _steps(run: str) -> list[str]:
    return [f"{run}:prep", *(f"{run}:fan{i}.{s}" for i in range(ITEMS) for s in "ab"),
            f"{run}:join"]


def _result(url: str, run: str) -> Any:
    return json.loads(run_cli("replay", run, "--world", url, "--json", "--tools", TOOLS).stdout)


def test_one_runs_branches_spread_over_workers_each_once(tmp_path: Path,
                                                         postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, 1)
    # the owner, one branch slot: it executes one branch at a time itself and leaves the
    # rest queued; the two started once it has begun, idle, take them
    owner = _worker(tmp_path, postgres_url, "--concurrency", "1", LWTOOL_TEST_SLEEP="0.1")
    deadline = time.monotonic() + 120
    while not (tmp_path / "who.log").exists() or "fan" not in (tmp_path / "who.log").read_text():
        assert owner.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    helpers = [_worker(tmp_path, postgres_url, "--concurrency", "3", LWTOOL_TEST_SLEEP="0.1")
               for _ in range(2)]
    logs = [w.communicate(timeout=240) for w in (owner, *helpers)]
    assert all(w.returncode == 0 for w in (owner, *helpers)), [err for _, err in logs]
    marks = _marks(tmp_path)
    assert sorted(marks) == sorted(_steps("r00"))
    assert set(marks.values()) == {1}  # every step exactly once
    assert sum(err.count("claimed branch") for _, err in logs) == ITEMS
    who = _who(tmp_path)  # the run's branches went to several workers
    pids = {p for label, ps in who.items() if label.startswith("r00:fan") for p in ps}
    assert len(pids) >= 2, pids
    assert "claimed branch" in logs[0][1] and any("claimed branch" in e for _, e in logs[1:])
    expected = _in_process(tmp_path, "r00")
    assert expected["status"] == "completed"
    got = _result(postgres_url, "r00")
    assert got["output"] == expected["output"] == {"value": "11-fan11.a-fan11.b-join"}
    fan_in = [json.loads(line) for line in run_cli("events", "r00", "--world", postgres_url,
                                                   "--json").stdout.splitlines()]
    fan = next(e for e in fan_in if e["type"] == "StepCompleted" and e["stepPath"] == "fan")
    assert fan["payload"]["branches"] == [str(i) for i in range(ITEMS)]  # declared order
    assert [b["value"] for b in fan["payload"]["envelope"]["output"]] == \
        [f"{i}-fan{i}.a-fan{i}.b" for i in range(ITEMS)]
    verified = run_cli("verify", "r00", "--world", postgres_url)
    assert verified.returncode == 0, verified.stderr  # one hash chain, many writers


def test_a_worker_killed_inside_a_branch_leaves_run_and_branch_to_others(
        tmp_path: Path, postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, 1)
    # the only worker at first: it owns r00 and executes its branches; branch 5 blocks
    # in step b, after its step a committed
    # a lease far longer than the test waits: the dead worker's lock tells, at once
    doomed = _worker(tmp_path, postgres_url, "--lease-seconds", "120", "--concurrency", "4",
                     LWTOOL_TEST_BLOCK="r00:fan5.b")
    deadline = time.monotonic() + 120
    while not (tmp_path / "blocked").exists():
        assert doomed.poll() is None, doomed.stderr.read() if doomed.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    held = run_cli("runs", "--world", postgres_url).stdout
    assert "branch fan[5]. held by" in held, held
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(timeout=30)
    died = time.monotonic()
    replacements = [_worker(tmp_path, postgres_url, "--lease-seconds", "120")
                    for _ in range(2)]
    logs = [w.communicate(timeout=240) for w in replacements]
    assert all(w.returncode == 0 for w in replacements), [err for _, err in logs]
    assert time.monotonic() - died < 40  # the run and its branch taken over, not leased out
    assert any("claimed branch fan[5]. of run r00 (claim 2)" in err for _, err in logs)
    marks = _marks(tmp_path)
    assert sorted(marks) == sorted(_steps("r00"))
    again = {k: v for k, v in marks.items() if v != 1}
    # only the step in flight ran again (and a branch the dead worker had not reached
    # the end of may have had its own step in flight: none here, concurrency 4 < 12
    # branches, so at most the blocked one and those still starting)
    assert "r00:fan5.b" in again and "r00:fan5.a" not in again and "r00:prep" not in again
    assert _result(postgres_url, "r00")["output"] == {"value": "11-fan11.a-fan11.b-join"}
    assert run_cli("verify", "r00", "--world", postgres_url).returncode == 0


def test_a_failing_branch_fails_the_run_as_in_one_process(tmp_path: Path,
                                                          postgres_url: str) -> None:
    _enqueue(tmp_path, postgres_url, 1, fail_on=7)
    worker = _worker(tmp_path, postgres_url, "--concurrency", "2")
    _, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err
    assert "branch fan[7]. of run r00 failed" in err
    expected = _in_process(tmp_path, "r00", fail_on=7)
    got = run_cli("replay", "r00", "--world", postgres_url, "--json", "--tools", TOOLS)
    assert got.returncode == 1
    failed = json.loads(got.stdout)
    assert (failed["causeCode"], failed["failedStepPath"]) == ("step_failed", "fan[7].a")
    assert (failed["causeCode"], failed["failedStepPath"]) == \
        (expected["causeCode"], expected["failedStepPath"])
    assert Counter(_marks(tmp_path))["r00:join"] == 0
    # fail_fast reached the branch queue from the run's own loop: branches not yet
    # claimed were cancelled there, none is left queued or claimed
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        states = dict(conn.execute("SELECT state, count(*) FROM lwtool.branches "
                                   "GROUP BY state").fetchall())
    assert states.get("cancelled", 0) >= 1 and not {"queued", "claimed"} & set(states), states

"""Operations under `lwtool worker` (a real PostgreSQL). human.input: branches executed
by workers wait each on its own path, the run ends its claim as `waiting` (the worker
drains and stops), `lwtool runs` shows what it waits for, and once answered the run goes
on from its log: no step committed before the wait runs again. Budgets: a run's budget
(given at --enqueue) holds across the workers executing its branches."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.world.test_workers import TOOLS, _marks, _worker

pytestmark = pytest.mark.slow


def _workflow(path: Path) -> None:
    def mark(step: str, value: str) -> dict[str, object]:
        return {"tool": "mark", "args": {"run": "w", "step": step, "value": value}}

    path.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "approve-each"}, "permissions": {"tools": ["mark"]},
        "steps": [
            {"id": "prep", "uses": "tool.call", "with": mark("prep", "p")},
            {"id": "fan", "uses": "parallel", "needs": ["prep"],
             "with": {"items": [0, 1, 2], "maxBranches": 3, "maxConcurrency": 3},
             "steps": [
                 {"id": "ask", "uses": "human.input",
                  "with": {"prompt": "ok {{ item }}?", "schema": {"type": "integer"}}},
                 {"id": "b", "uses": "tool.call", "needs": ["ask"],
                  "with": mark("b{{ item }}", "{{ steps.ask.output }}")}]},
            {"id": "join", "uses": "tool.call", "needs": ["fan"],
             "with": mark("join", "{{ steps.fan.output[2].value }}")}]}))


def test_worker_branches_wait_and_the_run_goes_on_once_answered(tmp_path: Path,
                                                                 postgres_url: str) -> None:
    _workflow(tmp_path / "wf.lwir.json")
    (tmp_path / "in.json").write_text("{}")
    queued = run_cli("run", str(tmp_path / "wf.lwir.json"), "-i", str(tmp_path / "in.json"),
                     "--enqueue", "--run-id", "w", "--world", postgres_url)
    assert queued.returncode == 0, queued.stderr
    worker = _worker(tmp_path, postgres_url, "--concurrency", "2")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "run w waits for a person at fan[0].ask, fan[1].ask, fan[2].ask" in err
    listed = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert listed[0]["status"] == "waiting"  # requests in commit order: here, any order
    assert sorted((w["stepPath"], w["prompt"]) for w in listed[0]["waitingFor"]) == [
        ("fan[0].ask", "ok 0?"), ("fan[1].ask", "ok 1?"), ("fan[2].ask", "ok 2?")]
    assert _marks(tmp_path) == {"w:prep": 1}

    for index in range(3):  # the last answer queues the run again for the workers
        (tmp_path / "a.json").write_text(str(10 + index))
        more = ("--enqueue",) if index == 2 else ()
        answered = run_cli("respond", "w", f"fan[{index}].ask", "--input",
                           str(tmp_path / "a.json"), "--world", postgres_url, *more)
        assert answered.returncode == 0, answered.stderr
    assert "run w queued again" in answered.stderr
    worker = _worker(tmp_path, postgres_url, "--concurrency", "2")
    _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0 and "run w done" in err, err
    done = run_cli("replay", "w", "--world", postgres_url, "--json", "--tools", TOOLS)
    assert json.loads(done.stdout)["output"] == {"value": "12-b2-join"}
    assert _marks(tmp_path) == {"w:prep": 1, "w:b0": 1, "w:b1": 1, "w:b2": 1, "w:join": 1}
    refused = run_cli("respond", "w", "fan[0].ask", "--input", str(tmp_path / "a.json"),
                      "--world", postgres_url, "--enqueue")
    assert refused.returncode == 2 and "has completed" in refused.stderr
    verified = run_cli("verify", "--world", postgres_url)
    assert verified.returncode == 0, verified.stderr


def test_answers_given_while_a_worker_executes_the_run_are_taken_up_there(
        tmp_path: Path, postgres_url: str) -> None:
    """Branches executed by the worker wait for answers while `slow` holds the run; the
    answers given meanwhile (no --enqueue) go to the run where it executes: the answered
    branches go on at once (queued again for the worker), and the worker finishes the
    run without it ever stopping to wait."""
    import time

    def mark(step: str, value: str, **more: object) -> dict[str, object]:
        return {"tool": "mark", "args": {"run": "m", "step": step, "value": value, **more}}

    (tmp_path / "wf.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "meanwhile"}, "permissions": {"tools": ["mark"]},
        "steps": [
            {"id": "prep", "uses": "tool.call", "with": mark("prep", "p")},
            {"id": "fan", "uses": "parallel", "needs": ["prep"],
             "with": {"items": [0, 1], "maxBranches": 2, "maxConcurrency": 2},
             "steps": [
                 {"id": "ask", "uses": "human.input",
                  "with": {"prompt": "ok {{ item }}?", "schema": {"type": "integer"}}},
                 {"id": "b", "uses": "tool.call", "needs": ["ask"],
                  "with": mark("b{{ item }}", "{{ steps.ask.output }}")}]},
            {"id": "slow", "uses": "tool.call", "needs": ["prep"],
             "with": mark("slow", "s", gate=True)},
            {"id": "join", "uses": "tool.call", "needs": ["fan", "slow"],
             "with": mark("join", "{{ steps.fan.output[1].value }}")}]}))
    (tmp_path / "in.json").write_text("{}")
    world = ("--world", postgres_url)
    assert run_cli("run", str(tmp_path / "wf.lwir.json"), "-i", str(tmp_path / "in.json"),
                   "--enqueue", "--run-id", "m", *world).returncode == 0
    worker = _worker(tmp_path, postgres_url, "--concurrency", "3")
    try:
        until = time.monotonic() + 60
        while not (tmp_path / "gate-started").exists() or [
                e["type"] for e in map(json.loads, run_cli(
                    "events", "m", "--json", *world).stdout.splitlines())
        ].count("HumanInputRequested") < 2:
            assert time.monotonic() < until and worker.poll() is None, "no requests"
            time.sleep(0.1)
        for index in range(2):
            (tmp_path / "a.json").write_text(str(10 + index))
            answered = run_cli("respond", "m", f"fan[{index}].ask", "--input",
                               str(tmp_path / "a.json"), *world)
            assert answered.returncode == 0, answered.stderr
            assert "run m is executing: it goes on with the answer itself" in \
                answered.stderr
        while not {"m:b0", "m:b1"} <= set((tmp_path / "marks.log").read_text().split()):
            assert time.monotonic() < until + 60, "the answered branches did not go on"
            time.sleep(0.1)  # they go on at once, while `slow` still holds the run
        (tmp_path / "open-gate").touch()
        _, err = worker.communicate(timeout=120)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0 and "run m done" in err, err
    assert "waits for a person" not in err
    done = run_cli("replay", "m", "--json", "--tools", TOOLS, *world)
    assert json.loads(done.stdout)["output"] == {"value": "11-b1-join"}
    assert _marks(tmp_path) == {"m:prep": 1, "m:slow": 1, "m:b0": 1, "m:b1": 1, "m:join": 1}


FAN_OF_CALLS = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: fan-of-calls}
permissions: {models: [writer]}
steps:
  - id: fan
    uses: parallel
    with: {items: [0, 1, 2, 3], maxBranches: 4, maxConcurrency: 2}
    steps:
      - {id: say, uses: ai.generate, with: {model: writer, prompt: "Say {{ item }}"}}
"""


def test_a_budget_holds_across_the_workers_executing_the_branches(
        tmp_path: Path, postgres_url: str) -> None:
    from tests.fixtures.openai_server import fixture_server

    (tmp_path / "wf.lwir.yaml").write_text(FAN_OF_CALLS)
    (tmp_path / "in.json").write_text("{}")
    (tmp_path / "models.yaml").write_text("writer: openai/gpt-4o-mini\n")
    queued = run_cli("run", str(tmp_path / "wf.lwir.yaml"), "-i", str(tmp_path / "in.json"),
                     "--models", str(tmp_path / "models.yaml"), "--enqueue", "--run-id", "b",
                     "--world", postgres_url, "--max-tokens", "15")
    assert queued.returncode == 0, queued.stderr
    with fixture_server(["A", "B", "C", "D"]) as server:  # each answer: 11 + 7 tokens
        worker = _worker(tmp_path, postgres_url, "--concurrency", "2",
                         OPENAI_API_BASE=server.base_url, OPENAI_BASE_URL=server.base_url,
                         OPENAI_API_KEY="sk-fixture")
        _, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    # the first two branches started with nothing spent; the next saw what they spent
    # (18 or 36 tokens: the other may still be answering) and started no call
    assert len(server.requests) == 2, err
    assert re.search(r"run b failed \(budget_exceeded\): no model call started: the token "
                     r"budget is spent: (18|36) tokens used of 15", err), err

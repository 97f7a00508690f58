"""A parent queued on PostgreSQL whose worker is SIGKILLed while one of its children's
steps is in flight: another worker resumes the parent and, through it, the child."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from lwtool.record.ids import child_run_id
from tests.conftest import ROOT, run_cli
from tests.runtime.test_kill_and_replay import HERE, TOOLS, _calls, _kill, _wait_for
from tests.runtime.test_workflow_invoke import CALLS, CHILD_PATHS, INPUT, OUTPUT

pytestmark = pytest.mark.slow


def test_a_worker_killed_in_a_childs_step_loses_nothing(tmp_path: Path,
                                                       postgres_url: str) -> None:
    """A parent queued on PostgreSQL, its worker SIGKILLed while a child's step hangs:
    a second worker resumes the parent and, through it, the child, to the uninterrupted
    output, one child run per invoke."""
    work = tmp_path / "queued"
    work.mkdir()
    (work / "input.json").write_text(json.dumps(INPUT))
    queued = run_cli("run", str(HERE / "workflows" / "invoke.lwir.yaml"), "-i",
                     str(work / "input.json"), "--enqueue", "--run-id", "P", "--world",
                     postgres_url)
    assert queued.returncode == 0, queued.stderr

    def worker(**env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--tools",
             TOOLS, "--data-dir", str(work / "data"), "--drain", "--lease-seconds", "2"],
            cwd=ROOT, env={**os.environ, "LWTOOL_TEST_DIR": str(work), **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = worker(LWTOOL_TEST_BLOCK="improve-2")
    _wait_for(work / "blocked-improve-2", first)
    _kill(first)
    second = worker()
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    replayed = run_cli("replay", "P", "--world", postgres_url, "--tools", TOOLS, "--json")
    assert json.loads(replayed.stdout)["output"] == OUTPUT
    rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert sorted(r["runId"] for r in rows if r["runId"] != "P") == sorted(
        child_run_id("P", p) for p in CHILD_PATHS)
    assert {r["status"] for r in rows} == {"completed"}
    assert _calls(work) == CALLS + Counter({"improve:improve-2": 1})  # the one in flight


CHILD_TOOLS = '''
from lwtool import ToolRegistry
from tests.runtime.side_effects import tools as every

tools = ToolRegistry({name: tool for name, tool in every.tools.items() if name != "record"})
'''


def test_a_child_runs_on_another_worker_and_survives_its_death(tmp_path: Path,
                                                               postgres_url: str) -> None:
    """Worker B serves the children's tools only (not the parent's `record`): worker A
    claims the parent, B claims its first child from the queue at once and is SIGKILLed
    in that child's step; A, whose parent waits, takes the child over once B is gone
    and finishes everything: the uninterrupted output, one child per invoke."""
    work = tmp_path / "queued"
    work.mkdir()
    (work / "child_tools.py").write_text(CHILD_TOOLS)

    def worker(tools: str, **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--tools",
             tools, "--data-dir", str(work / "data"), "--concurrency", "1", "-v",
             "--lease-seconds", "2"],
            cwd=ROOT, env={**os.environ, "LWTOOL_TEST_DIR": str(work),
                           "PYTHONPATH": str(ROOT), **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    b = worker(f"{work / 'child_tools.py'}:tools", LWTOOL_TEST_BLOCK="improve-2")
    (work / "input.json").write_text(json.dumps(INPUT))
    queued = run_cli("run", str(HERE / "workflows" / "invoke.lwir.yaml"), "-i",
                     str(work / "input.json"), "--enqueue", "--run-id", "P", "--world",
                     postgres_url)
    assert queued.returncode == 0, queued.stderr
    a = worker(TOOLS)
    done = False
    try:
        _wait_for(work / "blocked-improve-2", b)
        _kill(b)
        b_log = b.stderr.read() if b.stderr else ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and a.poll() is None and not done:
            rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
            done = len(rows) == 4 and all(r["status"] == "completed" for r in rows)
            time.sleep(0.2)
    finally:
        a.send_signal(signal.SIGTERM)
        try:
            a_log = a.communicate(timeout=60)[1]
        except subprocess.TimeoutExpired:
            a.kill()
            a_log = a.communicate()[1]
    if not done:
        Path(f"/tmp/child-test-{os.getpid()}.log").write_text(
            a_log + "\n----- B\n" + b_log + "\n----- runs\n"
            + run_cli("runs", "--world", postgres_url).stdout)
    assert done, (a_log, run_cli("runs", "--world", postgres_url).stdout)
    polish = child_run_id("P", "polish")
    assert f"claimed run {polish} (claim 1)" in b_log, b_log
    assert f"claimed run {polish} (claim 2), a child of run P" in a_log, a_log
    replayed = run_cli("replay", "P", "--world", postgres_url, "--tools", TOOLS, "--json")
    assert json.loads(replayed.stdout)["output"] == OUTPUT
    rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert sorted(r["runId"] for r in rows if r["runId"] != "P") == sorted(
        child_run_id("P", p) for p in CHILD_PATHS)
    assert _calls(work) == CALLS + Counter({"improve:improve-2": 1})  # the one in flight


def test_a_child_waiting_for_a_person_wakes_its_parent_once_answered(
        tmp_path: Path, postgres_url: str) -> None:
    """Under workers a child that waits makes its parent wait; answering the child
    (`respond --enqueue`) lets a worker finish it, which queues the parent again."""
    import yaml

    head = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow"}
    ask = {"id": "ask", "uses": "human.input", "with": {
        "prompt": "a number?", "schema": {"type": "integer"}}}
    use = {"id": "w", "uses": "tool.call", "needs": ["ask"], "with": {"tool": "work"},
           "input": {"id": "y", "n": "{{ steps.ask.output }}"}}
    (tmp_path / "child.lwir.yaml").write_text(yaml.safe_dump({
        **head, "metadata": {"name": "child"}, "permissions": {"tools": ["work"]},
        "steps": [ask, use]}))
    (tmp_path / "parent.lwir.yaml").write_text(yaml.safe_dump({
        **head, "metadata": {"name": "parent"}, "permissions": {"tools": ["work"]},
        "steps": [{"id": "child", "uses": "workflow.invoke",
                   "with": {"workflow": "./child.lwir.yaml"}}]}))
    (tmp_path / "in.json").write_text("{}")
    world = ("--world", postgres_url)
    assert run_cli("run", str(tmp_path / "parent.lwir.yaml"), "-i", str(tmp_path / "in.json"),
                   "--enqueue", "--run-id", "W", *world).returncode == 0

    def drain() -> str:
        done = subprocess.run(
            [sys.executable, "-m", "lwtool", "worker", *world, "--tools", TOOLS,
             "--data-dir", str(tmp_path / "data"), "--drain", "-v"], cwd=ROOT,
            env={**os.environ, "LWTOOL_TEST_DIR": str(tmp_path)}, capture_output=True,
            text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stderr

    drain()
    child = child_run_id("W", "child")
    states = {r["runId"]: r["status"] for r in json.loads(
        run_cli("runs", *world, "--json").stdout)}
    assert states == {"W": "waiting", child: "waiting"}
    (tmp_path / "answer.json").write_text("21")
    answered = run_cli("respond", child, "ask", "--input", str(tmp_path / "answer.json"),
                       *world, "--enqueue")
    assert answered.returncode == 0, answered.stderr
    log = drain()
    assert "run W queued again: its child ended" in log, log
    replayed = run_cli("replay", "W", *world, "--tools", TOOLS, "--json")
    assert json.loads(replayed.stdout)["output"] == {"id": "y", "double": 42}

"""Harness session durability with real SIGKILLs: between turns, during a model call
and during a tool call. The resumed session ends with the uninterrupted session's
answer; committed model replies and tool results are fed back, never asked again;
only the call in flight at the kill runs twice."""

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

from tests.conftest import ROOT
from tests.harness.test_bash import requires_bwrap

SCRIPT = Path(__file__).parent / "session_script.py"
pytestmark = pytest.mark.slow
EVERYTHING_ONCE = Counter({"model:turn-1": 1, "tool:a": 1, "tool:b": 1, "model:turn-2": 1,
                           "tool:c": 1, "model:turn-3": 1})
ANSWER = "notes: A,B,C"


def _start(work: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(SCRIPT), str(work / "data"), "sess"],
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT),
                                           "LWTOOL_TEST_DIR": str(work), **env},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(work: Path) -> dict[str, object]:
    proc = _start(work)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out)


def _calls(work: Path) -> Counter[str]:
    return Counter((work / "calls.log").read_text().split())


def _kill_when_blocked(work: Path, proc: subprocess.Popen[str], name: str) -> None:
    deadline = time.monotonic() + 60
    while not (work / f"blocked-{name}").exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def test_uninterrupted(tmp_path: Path) -> None:
    assert _finish(tmp_path)["output"] == ANSWER
    assert _calls(tmp_path) == EVERYTHING_ONCE


@pytest.mark.parametrize("fault", ["harness.tool_call.succeeded@session#2",
                                   "harness.model.responded@session#2"])
def test_kill_between_turns(tmp_path: Path, fault: str) -> None:
    """After turn 1's tool results (or turn 2's reply) are committed."""
    proc = _start(tmp_path, LWTOOL_FAULT_KILL_AFTER=fault)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    result = _finish(tmp_path)
    assert result["output"] == ANSWER and result["turns"] == 3
    assert _calls(tmp_path) == EVERYTHING_ONCE  # nothing committed was asked again


def test_kill_during_a_model_call(tmp_path: Path) -> None:
    proc = _start(tmp_path, LWTOOL_TEST_BLOCK="turn-2")
    _kill_when_blocked(tmp_path, proc, "turn-2")
    assert _finish(tmp_path)["output"] == ANSWER
    assert _calls(tmp_path) == EVERYTHING_ONCE + Counter({"model:turn-2": 1})


def test_kill_during_a_tool_call(tmp_path: Path) -> None:
    proc = _start(tmp_path, LWTOOL_TEST_BLOCK="c")
    _kill_when_blocked(tmp_path, proc, "c")
    assert _finish(tmp_path)["output"] == ANSWER
    assert _calls(tmp_path) == EVERYTHING_ONCE + Counter({"tool:c": 1})


def test_a_session_run_is_not_replayed_as_a_workflow(tmp_path: Path) -> None:
    proc = _start(tmp_path, LWTOOL_TEST_BLOCK="c")
    _kill_when_blocked(tmp_path, proc, "c")
    replay = subprocess.run([sys.executable, "-m", "lwtool", "replay", "sess", "--data-dir",
                             str(tmp_path / "data")], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert replay.returncode == 1
    assert "is a harness session, not a workflow run" in replay.stderr
    events = subprocess.run([sys.executable, "-m", "lwtool", "events", "sess", "--data-dir",
                             str(tmp_path / "data"), "--caller", "model"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert events.returncode == 0 and events.stdout.count("harness.tool_call.started") == 3


BASH_SCRIPT = Path(__file__).parent / "bash_session_script.py"


def _sandboxed_sleepers() -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmdline[:2] == [b"sleep", b"3601"]:
            found.append(int(pid))
    return found


@pytest.mark.parametrize("sandbox", [pytest.param("bwrap", marks=requires_bwrap),
                                     "path-check"])
@pytest.mark.parametrize("key", ["a", "b"])
def test_kill_during_a_bash_command_resumes_and_leaves_no_process(tmp_path: Path,
                                                                  key: str,
                                                                  sandbox: str) -> None:
    store = tmp_path / "data/memory/workflows/wf"
    store.mkdir(parents=True)
    (store / f"block-{key}").write_text("")
    command = [sys.executable, str(BASH_SCRIPT), str(tmp_path / "data"), "bsess"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LWTOOL_BASH_SANDBOX": sandbox}
    if sandbox == "path-check":  # the command runs on the host: the store at its host path
        env["LWTOOL_TEST_STORE"] = str(store)
    before = set(_sandboxed_sleepers())
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not set(_sandboxed_sleepers()) - before:  # it sleeps just after `blocked-x`
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert (store / f"blocked-{key}").exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while set(_sandboxed_sleepers()) - before:  # the sandbox dies with the session
        assert time.monotonic() < deadline, "a sandboxed process outlived the session"
        time.sleep(0.05)
    (store / f"block-{key}").unlink()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "ran: A,B"
    # The command in flight at the kill ran again; the committed one did not.
    assert (store / "calls.log").read_text().split() == (
        ["a", "a", "b"] if key == "a" else ["a", "b", "b"])

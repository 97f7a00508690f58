"""A workflow run pins its tools' code (hardening of "Definitions honoured", item 4): a
run resumed after a tool's implementation changed is capability_drift, unless the change
is accepted with `lwtool replay --accept-drift`, which records it; committed calls are
never made again either way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lwtool.runtime import drift
from tests.conftest import ROOT, run_cli
from tests.runtime.test_kill_and_replay import _env, _wait_for

TOOLS = """\
import os, time
from pathlib import Path

def first(args):
    with open(Path(os.environ["LWTOOL_TEST_DIR"]) / "calls.log", "a") as log:
        log.write("first\\n")
    return {"v": 1}

def second(args):
    if os.environ.get("BLOCK_SECOND"):
        (Path(os.environ["LWTOOL_TEST_DIR"]) / "blocked").touch()
        time.sleep(3600)
    return {"v": VALUE}

tools = {"first": first, "second": second}
"""
WORKFLOW = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "drift", "version": "0.1.0"},
            "permissions": {"tools": ["first", "second"], "models": []},
            "steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "first"}},
                      {"id": "b", "uses": "tool.call", "needs": ["a"],
                       "with": {"tool": "second"}}]}


def test_a_changed_tool_is_drift_until_accepted(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS.replace("VALUE", "2"))
    (tmp_path / "wf.lwir.json").write_text(json.dumps(WORKFLOW))
    (tmp_path / "in.json").write_text("{}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", "wf.lwir.json", "--input", "in.json", "--tools",
         "tools.py:tools", "--data-dir", "data", "--run-id", "d1", "--quiet"], cwd=tmp_path,
        env={**_env(tmp_path, BLOCK_SECOND="1"), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(tmp_path / "blocked", proc)
    proc.kill()
    proc.wait(timeout=30)
    (tmp_path / "tools.py").write_text(TOOLS.replace("VALUE", "3"))  # the code changed
    args = ["replay", "d1", "--tools", "tools.py:tools", "--data-dir", "data", "--json"]
    refused = run_cli(*args, cwd=tmp_path, env=_env(tmp_path))
    assert refused.returncode == 1, refused.stderr
    assert json.loads(refused.stdout)["causeCode"] == "capability_drift"
    assert "tools the run used changed since it started: second" in refused.stderr
    assert "--accept-drift" in refused.stderr
    accepted = run_cli(*args, "--accept-drift", cwd=tmp_path, env=_env(tmp_path))
    assert accepted.returncode == 0, accepted.stderr
    assert json.loads(accepted.stdout)["output"] == {"v": 3}
    assert (tmp_path / "calls.log").read_text().split() == ["first"]  # never called again
    events = run_cli("events", "d1", "--data-dir", "data", "--json", cwd=tmp_path).stdout
    kinds = [json.loads(line)["type"] for line in events.splitlines()]
    assert kinds.count("CapabilityDriftAccepted") == 1
    again = run_cli(*args, cwd=tmp_path, env=_env(tmp_path))  # finished: reads its result
    assert again.returncode == 0 and json.loads(again.stdout)["output"] == {"v": 3}


def test_a_log_from_before_fingerprints_compares_presence() -> None:
    old = {"tools": {"first": True}, "models": {}, "harness": "h"}
    assert not drift.differs(old, {"tools": {"first": "sha256:ab"}, "models": {}, "harness": "h"})
    assert drift.differs(old, {"tools": {"first": False}, "models": {}, "harness": "h"})
    new = {"tools": {"first": "sha256:ab"}, "models": {}, "harness": "h"}
    assert drift.differs(new, {"tools": {"first": "sha256:cd"}, "models": {}, "harness": "h"})


def test_a_tool_absent_then_present_is_no_drift() -> None:
    """A run that had no such tool could not have called it: given now (a retry after
    the tool was installed), nothing it recorded came from another tool."""
    absent = {"tools": {"first": "sha256:ab", "later": False}, "models": {}, "harness": "h"}
    given = {"tools": {"first": "sha256:ab", "later": "sha256:ef"}, "models": {},
             "harness": "h"}
    assert not drift.differs(absent, given)
    assert drift.differs(given, absent)  # present, then gone: drift as before
    assert drift.differs(absent, {**given, "tools": {"first": "sha256:cd", "later": "x"}})

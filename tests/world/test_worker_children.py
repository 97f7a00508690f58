"""A parent queued on PostgreSQL whose worker is SIGKILLed while one of its children's
steps is in flight: another worker resumes the parent and, through it, the child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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

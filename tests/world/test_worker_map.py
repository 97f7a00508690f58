"""A map step under `lwtool worker` (real PostgreSQL, two real worker processes): its
shards and reduce nodes are child runs queued for any worker; a worker SIGKILLed while
it holds the parent loses nothing: the other finishes the run, every shard once, to the
output of a run in the local world."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.runtime.test_map import _calls, _flow, _input

pytestmark = pytest.mark.slow


def test_two_workers_share_a_maps_shards_and_one_killed_loses_nothing(
        tmp_path: Path, postgres_url: str) -> None:
    local = tmp_path / "local"
    local.mkdir()
    _flow(local, toleratedFailure={"count": 3}, maxConcurrency=4,
          reduce={"workflow": "./merge.lwir.yaml", "arity": 2})
    _input(local, 30, bad=(4,))
    expected = run_cli("run", "flow.lwir.json", "-i", "in.json", "--tools", "tools.py:tools",
                       "--data-dir", "d", "--json", "-q", cwd=local)
    assert expected.returncode == 0, expected.stderr
    work = tmp_path / "queued"
    shutil.copytree(local, work, ignore=shutil.ignore_patterns("d", "calls.log"))
    queued = run_cli("run", "flow.lwir.json", "-i", "in.json", "--enqueue", "--run-id", "M",
                     "--world", postgres_url, cwd=work)
    assert queued.returncode == 0, queued.stderr

    def worker() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "lwtool", "worker", "--world", postgres_url, "--tools",
             "tools.py:tools", "--data-dir", "data", "--drain", "--lease-seconds", "2",
             "--concurrency", "4"], cwd=work, env=dict(os.environ),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first, second = worker(), worker()
    deadline = time.monotonic() + 60
    while _calls(work).total() < 8:  # a few shards in, then the first worker dies
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    done = run_cli("replay", "M", "--world", postgres_url, "--tools", "tools.py:tools",
                   "--json", cwd=work)
    assert json.loads(done.stdout)["output"] == json.loads(expected.stdout)["output"]
    calls = _calls(work)
    scores = {k: n for k, n in calls.items() if k.startswith("score")}
    # every item scored (t5 at most: its shard stops at the bad t4, fail_fast), a call
    # in flight on the killed worker at most once more
    assert {f"score t{i}" for i in range(30) if i != 5} <= set(scores), calls
    assert sum(scores.values()) <= 30 + 4, calls
    rows = json.loads(run_cli("runs", "--world", postgres_url, "--json").stdout)
    assert {r["status"] for r in rows} == {"completed", "failed"}  # the bad shard failed
    assert len(rows) == 1 + 10 + 11  # the run, 10 shards, 5 + 3 + 2 + 1 reduce nodes

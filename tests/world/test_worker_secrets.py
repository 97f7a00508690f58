"""Secrets under `lwtool worker` (real PostgreSQL, real worker processes): a queued run
needs the names of its permissions.secrets (`secret NAME`); a worker whose broker lacks
one leaves the run queued and `lwtool runs` says so; a worker given the secret
(`--secrets FILE`: its loops start in an empty context, the file is the process's)
runs it, and the value is masked in the run's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.slow
TOOLS = "def whoami(args, ctx):\n    return 'token ' + ctx.secret('API_TOKEN')\n\n" \
        "tools = {'whoami': whoami}\n"


def _worker(work: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "API_TOKEN"}
    return subprocess.run([sys.executable, "-m", "lwtool", "worker", "--world", url,
                           "--tools", str(work / "tools.py") + ":tools", "--data-dir",
                           str(work / "data"), "--drain", "-v", *extra], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_worker_takes_a_run_only_with_its_secrets(tmp_path: Path, postgres_url: str) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "flow.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "who"},
        "permissions": {"tools": ["whoami"], "secrets": ["API_TOKEN"]},
        "steps": [{"id": "who", "uses": "tool.call", "secrets": ["API_TOKEN"],
                   "with": {"tool": "whoami"}}]}))
    (tmp_path / "in.json").write_text("{}")
    queued = run_cli("run", "flow.lwir.json", "-i", "in.json", "--enqueue", "--run-id", "w1",
                     "--world", postgres_url, cwd=tmp_path)
    assert queued.returncode == 0, queued.stderr
    bare = _worker(tmp_path, postgres_url)
    assert bare.returncode == 0 and "claimed" not in bare.stderr, bare.stderr
    listed = run_cli("runs", "--world", postgres_url).stdout.splitlines()
    assert listed[1].split()[:2] == ["w1", "queued"], listed
    assert "secret API_TOKEN" in listed[1]
    (tmp_path / "s.env").write_text("API_TOKEN=worker-secret-555\n")
    given = _worker(tmp_path, postgres_url, "--secrets", str(tmp_path / "s.env"))
    assert given.returncode == 0, given.stderr
    events = run_cli("events", "w1", "--json", "--world", postgres_url).stdout
    completed = [json.loads(line) for line in events.splitlines()
                 if json.loads(line)["type"] == "RunCompleted"]
    assert completed[0]["payload"]["envelope"]["output"] == "token [secret:API_TOKEN]"
    assert "worker-secret-555" not in events

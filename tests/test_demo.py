"""The README's first set-up command keeps working: scripts/demo.sh runs the examples
end to end, offline."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.conftest import ROOT


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "lwtool").exists(),
                    reason="needs the .venv that scripts/bootstrap.sh makes")
def test_demo_script_runs_the_examples() -> None:
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, str(ROOT / "scripts" / "demo.sh")], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lwtool: run demo-loop completed" in result.stderr
    assert "lwtool: run demo-review completed" in result.stderr
    assert '"rounds": 3' in result.stdout and "unpriced" in result.stdout

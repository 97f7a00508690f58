"""The README's first set-up command keeps working: scripts/demo.sh runs the examples
end to end, offline."""

from __future__ import annotations

import shutil
import subprocess

from tests.conftest import ROOT


def test_demo_script_runs_the_examples() -> None:
    """Runs wherever the tests run: demo.sh bootstraps .venv itself when it is missing
    (CI and scripts/test.sh have made it already, so this is quick)."""
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, str(ROOT / "scripts" / "demo.sh")], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "lwtool: run demo-loop completed" in result.stderr
    assert "lwtool: run demo-review completed" in result.stderr
    assert '"rounds": 3' in result.stdout and "unpriced" in result.stdout
    assert "improve<br/><small>tool.call · maxVisits 4 · done ×3</small>" in result.stdout
    assert "lwtool: exported 20 spans of run demo-review" in result.stderr
    # the runs stay for `lwtool ui`, which the demo names
    assert "lwtool ui --data-dir .little-workflow/demo" in result.stdout
    listed = subprocess.run([str(ROOT / ".venv" / "bin" / "lwtool"), "runs", "--data-dir",
                             ".little-workflow/demo"], cwd=ROOT, capture_output=True, text=True)
    assert [line.split()[:2] for line in listed.stdout.splitlines()[1:]] == [
        ["demo-loop", "completed"], ["demo-review", "completed"]]

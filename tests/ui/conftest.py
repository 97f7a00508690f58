"""A data dir of real runs for the inspector's tests, made once per session by the CLI:
the two demo runs, a failed run, a run with a large output, and a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fixtures.session_run import harness_session_run

HERE = Path(__file__).parent
UI_TOOLS = f"{HERE / 'ui_tools.py'}:tools"
RUNTIME = ROOT / "tests" / "runtime"
SIDE_EFFECTS = f"{RUNTIME / 'side_effects.py'}:tools"


def lwtool(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lwtool", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("ui")
    data = str(work / "data")
    review = lwtool("run", "examples/candidate-review.lwir.yaml", "--input",
                    "examples/inputs/candidate-review.json", "--models",
                    "examples/models.offline.yaml", "--data-dir", data, "--run-id", "demo-review")
    assert review.returncode == 0, review.stderr
    loop = lwtool("run", "examples/refine-loop.lwir.yaml", "--input",
                  "examples/inputs/refine-loop.json", "--tools", "examples/tools.py:tools",
                  "--data-dir", data, "--run-id", "demo-loop")
    assert loop.returncode == 0, loop.stderr
    (work / "items.json").write_text(json.dumps(
        {"items": [{"id": "a", "n": 1}, {"id": "b", "n": 2, "fail": True}]}))
    broken = lwtool("run", str(RUNTIME / "workflows" / "fanout.lwir.yaml"), "--input",
                    str(work / "items.json"), "--tools", SIDE_EFFECTS, "--data-dir", data,
                    "--run-id", "broken", env={"LWTOOL_TEST_DIR": str(work)})
    assert broken.returncode == 1, broken.stderr
    big = subprocess.run([sys.executable, "-m", "lwtool", "run", str(HERE / "big.lwir.yaml"),
                          "--input", "-", "--tools", UI_TOOLS, "--data-dir", data, "--run-id",
                          "big"], cwd=ROOT, input="{}", text=True, capture_output=True,
                         timeout=120)
    assert big.returncode == 0, big.stderr
    (work / "seed.json").write_text('{"seed": "s"}')
    cut = lwtool("run", str(RUNTIME / "workflows" / "chain.lwir.yaml"), "--input",
                 str(work / "seed.json"), "--tools", SIDE_EFFECTS, "--data-dir", data,
                 "--run-id", "cut", env={"LWTOOL_TEST_DIR": str(work),
                                         "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@b"})
    assert cut.returncode == -signal.SIGKILL, cut.stderr
    _killed_and_resumed(work, data)
    harness_session_run(Path(data))
    return Path(data)


def _killed_and_resumed(work: Path, data: str) -> None:
    """Run `resumed`: killed after step b's model answered, then resumed."""
    from tests.fixtures.two_steps import killed_two_steps

    killed = killed_two_steps(work, Path(data), "resumed", "harness.model.responded@b")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = lwtool("replay", "resumed", "--data-dir", data)
    assert resumed.returncode == 0, resumed.stderr

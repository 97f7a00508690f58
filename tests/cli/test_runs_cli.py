"""`lwtool runs`: a header row, the workflow's name, and a run whose process was
SIGKILLed shown `interrupted` with the command that resumes it (text and JSON), in
the local world and in PostgreSQL; once resumed it is `completed`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Worlds, run_cli
from tests.fixtures.two_steps import killed_two_steps

EXAMPLE = ["examples/refine-loop.lwir.yaml", "--input", "examples/inputs/refine-loop.json",
           "--tools", "examples/tools.py:tools", "--quiet"]


def test_an_interrupted_run_is_named_with_how_to_resume_it(tmp_path: Path,
                                                           world_kind: str) -> None:
    env = Worlds.current().env(tmp_path / "data")
    data = ["--data-dir", str(tmp_path / "data")]
    assert run_cli("run", *EXAMPLE, *data, "--run-id", "done", env=env).returncode == 0
    killed = run_cli("run", *EXAMPLE, *data, "--run-id", "cut",
                     env={**env, "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@improve*"})
    assert killed.returncode == -9  # SIGKILLed mid-run, after a committed step
    listed = run_cli("runs", *data, env=env)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["RUN", "STATUS", "WORKFLOW", "STARTED", "UPDATED", "VERSION"]
    assert [line.split()[:3] for line in lines[1:3]] == [
        ["done", "completed", "refine-loop"], ["cut", "interrupted", "refine-loop"]]
    assert lines[-1].startswith("cut was interrupted (its process died); resume it: "
                                "lwtool replay cut")
    rows = json.loads(run_cli("runs", *data, "--json", env=env).stdout)
    assert [(r["runId"], r["status"], r["workflow"]) for r in rows] == [
        ("done", "completed", "refine-loop"), ("cut", "interrupted", "refine-loop")]
    resumed = run_cli("replay", "cut", *data, "--tools", "examples/tools.py:tools", env=env)
    assert resumed.returncode == 0, resumed.stderr
    after = run_cli("runs", *data, env=env).stdout
    assert "interrupted" not in after and after.splitlines()[2].split()[:2] == \
        ["cut", "completed"]


def test_no_runs_yet(tmp_path: Path) -> None:
    assert run_cli("runs", "--data-dir", str(tmp_path / "none")).stdout == "no runs\n"


def test_the_resume_hint_asks_for_no_models_the_run_recorded(tmp_path: Path) -> None:
    """A run's model mapping is recorded and reused by its resume: the hint does not ask
    for `--models`, and works as printed."""
    import shlex

    data = ["--data-dir", str(tmp_path / "data")]
    killed = killed_two_steps(tmp_path, tmp_path / "data", "cut", "StepCompleted@a", "-q")
    assert killed.returncode == -9, killed.stderr
    hint = run_cli("runs", *data).stdout.splitlines()[-1]
    command = hint.partition("resume it: ")[2]
    assert command == f"lwtool replay cut --data-dir {tmp_path / 'data'}", hint
    resumed = run_cli(*shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr

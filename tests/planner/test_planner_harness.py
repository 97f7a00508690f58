"""`planner.harness` names the harness the planner runs in ("Definitions honoured end to
end", item 3): a harness that handles PlanTask drafts, lwtool checks and repairs as for
the built-in planner (the grant included), and a name that cannot be loaded is an
error, not a silent default."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.planner.test_compile_loop import GOOD
from tests.planner.test_grant import undeclared_tool
from tests.planner.test_plan_cli import DEFINITION, TOOLS


def _folder(tmp_path: Path, harness: str) -> Path:
    (tmp_path / "loan.definition.yaml").write_text(DEFINITION.replace(
        "planner: {model: planner, maxWorkflowRevisions: 2}",
        f"planner: {{model: planner, maxWorkflowRevisions: 2, harness: '{harness}'}}"))
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    planner = Path(__file__).parent / "planner_harness.py"
    (tmp_path / "planner_harness.py").write_text(planner.read_text())
    return tmp_path


def _run(folder: Path, drafts: list[object]) -> object:
    return run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools", "tools.py:tools",
                   "--data-dir", "data", "--run-id", "r1", "--json", cwd=folder,
                   env={"LWTOOL_TEST_DIR": str(folder), "PLANNER_DRAFTS": json.dumps(drafts)})


def test_a_planner_harness_drafts_and_is_repaired_inside_the_grant(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "planner_harness.py:ListPlanner")
    done = _run(folder, [undeclared_tool(), GOOD])
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    assert json.loads(done.stdout)["output"].startswith("offline")  # type: ignore[attr-defined]
    tasks = [json.loads(line) for line in (folder / "plan-tasks.jsonl").read_text().splitlines()]
    assert len(tasks) == 2 and tasks[0]["model"] == "planner"
    assert "priorFindings" not in tasks[0]["request"]
    assert tasks[1]["request"]["priorFindings"][0]["code"] == "grant.tool"
    assert tasks[0]["system"].startswith("You design workflows in LWIR")


def test_a_planner_harness_that_never_drafts_validly_is_exhausted(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "planner_harness.py:ListPlanner")
    done = _run(folder, [undeclared_tool()])
    assert done.returncode == 1
    failure = json.loads(done.stdout)  # type: ignore[attr-defined]
    assert failure["causeCode"] == "planner_validation_exhausted"
    assert "/permissions/tools/1: grant.tool" in failure["message"]


def test_a_planner_harness_that_cannot_be_loaded_is_an_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "planner_harness.py:Missing")
    done = _run(folder, [GOOD])
    assert done.returncode == 1
    failure = json.loads(done.stdout)  # type: ignore[attr-defined]
    assert failure["causeCode"] == "runtime_config_error"
    assert "planner.harness" in failure["message"] and "Missing" in failure["message"]

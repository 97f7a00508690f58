"""`--offline` on run, replay, plan and orchestrate: every model slot, the planner's
included, goes to the offline model, so a definition can be planned and run with no key;
the offline planner's draft is valid LWIR within the definition's grant."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: summarize-ticket
description: Summarize a support ticket and rate its urgency.
input:
  schema: {type: object, required: [ticket], properties: {ticket: {type: string}}}
output:
  schema:
    type: object
    required: [summary, urgency]
    properties:
      summary: {type: string}
      urgency: {type: string, enum: [low, medium, high]}
models:
  - {id: writer, model: openai/gpt-4o-mini}
planner: {model: writer}
"""

NO_KEYS = {"OPENAI_API_KEY": ""}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "d.definition.yaml").write_text(DEFINITION)
    (tmp_path / "in.json").write_text('{"ticket": "The app crashes on login"}')
    return tmp_path


def test_plan_offline_drafts_valid_lwir_and_run_offline_runs_it(folder: Path) -> None:
    planned = run_cli("plan", "d.definition.yaml", "-i", "in.json", "-o", "out.lwir.yaml",
                      "--offline", "--data-dir", "data", cwd=folder, env=NO_KEYS)
    assert planned.returncode == 0, planned.stderr
    assert "draft 1 accepted" in planned.stderr
    assert run_cli("validate", "out.lwir.yaml", cwd=folder).returncode == 0
    assert run_cli("check", "out.lwir.yaml", cwd=folder).returncode == 0  # lock beside it
    ran = run_cli("run", "out.lwir.yaml", "-i", "in.json", "--offline", "--json",
                  "--data-dir", "data", cwd=folder, env=NO_KEYS)
    assert ran.returncode == 0, ran.stderr
    output = json.loads(ran.stdout)["output"]
    assert set(output) == {"summary", "urgency"} and output["urgency"] in (
        "low", "medium", "high")


def test_run_offline_plans_and_runs_a_definition(folder: Path) -> None:
    ran = run_cli("run", "d.definition.yaml", "-i", "in.json", "--offline", "--json",
                  "--data-dir", "data", "--run-id", "r1", cwd=folder, env=NO_KEYS)
    assert ran.returncode == 0, ran.stderr
    assert set(json.loads(ran.stdout)["output"]) == {"summary", "urgency"}
    again = run_cli("replay", "r1", "--offline", "--json", "--data-dir", "data", cwd=folder)
    assert again.returncode == 0 and json.loads(again.stdout)["output"] == \
        json.loads(ran.stdout)["output"]


def test_replay_offline_finishes_a_run_that_started_with_a_provider(folder: Path) -> None:
    (folder / "wf.lwir.yaml").write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: two}\n"
        "permissions: {tools: [note], models: [writer]}\nsteps:\n"
        "  - {id: first, uses: tool.call, with: {tool: note}}\n"
        "  - {id: write, uses: ai.generate, needs: [first], with: {model: writer, "
        "prompt: hi}}\n")
    (folder / "tools.py").write_text("def note(args):\n    return {'ok': True}\n"
                                     "tools = {'note': note}\n")
    (folder / "models.yaml").write_text("writer: openai/gpt-4o-mini\n")
    cut = run_cli("run", "wf.lwir.yaml", "-i", "in.json", "--tools", "tools.py:tools",
                  "--models", "models.yaml", "--data-dir", "data", "--run-id", "r2",
                  cwd=folder, env={**NO_KEYS, "LWTOOL_FAULT_KILL_AFTER": "StepCompleted@first"})
    assert cut.returncode == -9  # killed after the tool step, before any model call
    resumed = run_cli("replay", "r2", "--offline", "--accept-drift", "--tools",
                      "tools.py:tools", "--json", "--data-dir", "data", cwd=folder,
                      env=NO_KEYS)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"].startswith("offline answer: ")


def test_orchestrate_offline_needs_no_model(tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    shutil.copytree(ROOT / "examples" / "pipeline", folder)
    done = run_cli("orchestrate", "numbers.pipeline.yaml", "--input", "input.json",
                   "--tools", "tools.py:tools", "--offline", "--json", "--data-dir", "data",
                   cwd=folder, env=NO_KEYS)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    unmapped = run_cli("orchestrate", "numbers.pipeline.yaml", "--input", "input.json",
                       "--tools", "tools.py:tools", "--data-dir", "data2", cwd=folder)
    assert unmapped.returncode == 2 and "model slot 'orchestrator'" in unmapped.stderr

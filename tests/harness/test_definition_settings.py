"""Settings a definition accepts must act ("Definitions honoured end to end", items 3
and 7): `worker.system` and the worker skills reach every ai.generate call, before the
step's own system prompt; a custom harness gets the context it is documented to get
(model, system, mounts, bash, skills), and its output is checked against the step's
output mode (step_schema_error, not a completed run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tests.fixtures.openai_server import fixture_server

LWIR = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: triage, version: 0.1.0}
output: {schema: {type: object, required: [label], properties: {label: {type: string}}}}
permissions: {tools: [], models: [fast]}
steps:
  - id: label
    uses: ai.generate
    with: {model: fast, system: Step rules., prompt: Label it.}
    output:
      mode: object
      schema: {type: object, required: [label], properties: {label: {type: string}}}
"""
DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: triage
models: [{id: fast, model: openai/gpt-4o-mini}]
planner: {plan: triage.lwir.yaml}
worker:
  system: You are the triage worker.
  skills: [skills/tone]
"""
SKILL = "---\nname: tone\ndescription: Keep labels short.\n---\nUse one word.\n"
HARNESS = f"{ROOT / 'tests' / 'harness' / 'context_harness.py'}:harness"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "triage.lwir.yaml").write_text(LWIR)
    (tmp_path / "triage.definition.yaml").write_text(DEFINITION)
    (tmp_path / "skills/tone").mkdir(parents=True)
    (tmp_path / "skills/tone/SKILL.md").write_text(SKILL)
    (tmp_path / "in.json").write_text('{"text": "crash"}')
    return tmp_path


def _run(folder: Path, *extra: str, env: dict[str, str] | None = None) -> object:
    return run_cli("run", "triage.definition.yaml", "-i", "in.json", "--data-dir", "data",
                   "--json", *extra, cwd=folder, env={"LWTOOL_TEST_DIR": str(folder),
                                                      **(env or {})})


def test_worker_system_and_skills_reach_every_model_call(folder: Path) -> None:
    with fixture_server(['{"label": "bug"}']) as server:
        done = _run(folder, env={"OPENAI_API_BASE": server.base_url,
                                 "OPENAI_BASE_URL": server.base_url,
                                 "OPENAI_API_KEY": "sk-fixture"})
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    system = server.requests[0]["messages"][0]["content"]
    skills_at = system.index("Available skills")
    assert "- tone: Keep labels short." in system
    assert skills_at < system.index("You are the triage worker.") < system.index("Step rules.")


def test_a_custom_harness_gets_its_context(folder: Path) -> None:
    done = _run(folder, "--harness", HARNESS, env={"HARNESS_ANSWER": '{"label": "bug"}'})
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    seen = json.loads((folder / "context.json").read_text())
    assert seen["model"] == "openai/gpt-4o-mini"
    assert "You are the triage worker." in seen["system"] and "tone" in seen["system"]
    assert seen["mounts"]["/mnt/scratch/own"]["mode"] == "rw"
    assert seen["mounts"]["/mnt/memory/workflow"]["mode"] == "ro"
    assert seen["bash"]["sandbox"] in ("bwrap", "path-check")
    assert [s["name"] for s in seen["skills"]] == ["tone"]


def test_a_custom_harness_output_that_breaks_the_mode_fails_the_step(folder: Path) -> None:
    done = _run(folder, "--harness", HARNESS, env={"HARNESS_ANSWER": '"just text"'})
    assert done.returncode == 1, done.stdout  # type: ignore[attr-defined]
    failure = json.loads(done.stdout)  # type: ignore[attr-defined]
    assert failure["causeCode"] == "step_schema_error" and failure["failedStepPath"] == "label"
    assert "tests/context-harness@1 harness's output" in failure["message"]


def test_workers_see_the_planners_scratch_of_their_run(tmp_path: Path) -> None:
    """/mnt/scratch/from-planner is the planner session's own scratch of this run (it
    was another folder, and the planner's was deleted when its session ended); both go
    when the run ends. /mnt/scratch/peer-steps holds the other steps' outputs."""
    from tests.planner.test_compile_loop import GOOD
    from tests.planner.test_plan_cli import DEFINITION, TOOLS, _env, _submit

    (tmp_path / "loan.definition.yaml").write_text(DEFINITION)
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "in.json").write_text('{"applicant": "Ann"}')
    (tmp_path / "models.yaml").write_text("planner: openai/gpt-4o-mini\n")
    notes = {"tool_calls": [{"name": "bash", "arguments": json.dumps(
        {"command": "echo 'score first' > plan-notes.md"})}]}
    with fixture_server([notes, _submit(GOOD), "done"]) as server:
        done = run_cli("run", "loan.definition.yaml", "-i", "in.json", "--tools",
                       "tools.py:tools", "--models", "models.yaml", "--data-dir", "data",
                       "--run-id", "r1", "--harness", HARNESS, "--json", cwd=tmp_path,
                       env={**_env(server), "LWTOOL_TEST_DIR": str(tmp_path),
                            "HARNESS_ANSWER": '"summary"'})
    assert done.returncode == 0, done.stderr
    seen = json.loads((tmp_path / "context.json").read_text())
    source = seen["mounts"]["/mnt/scratch/from-planner"]["source"]
    assert source.endswith("runs/r1.plan/scratch")
    assert "plan-notes.md" in seen["fromPlanner"]
    assert seen["peerOutputs"] == {"credit": {"score": 700}}  # the sibling step's output
    assert not (tmp_path / "data/runs/r1.plan").exists()  # gone with the run


def test_a_worker_resumed_with_another_system_prompt_is_drift(folder: Path) -> None:
    """The worker manifest of the attempt in flight is compared on resume ("Definitions
    honoured end to end", item 4): a worker skill edited between the kill and the resume
    changes the worker's system prompt, and the run refuses to go on until it is back."""
    import os
    import signal
    import subprocess
    import sys
    import time

    with fixture_server(['{"label": "bug"}'], delay=60.0) as server:
        env = {**os.environ, "OPENAI_API_BASE": server.base_url,
               "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-fixture",
               "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, "-m", "lwtool", "run", "triage.definition.yaml",
                                 "-i", "in.json", "--data-dir", "data", "--run-id", "w1",
                                 "--json", "--quiet"], cwd=folder, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not server.requests:  # the model call is in flight
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        server.delay = 0.0
        skill = folder / "skills/tone/SKILL.md"
        skill.write_text(SKILL.replace("Keep labels short.", "Write long labels."))
        args = ["run", "triage.definition.yaml", "-i", "in.json", "--data-dir", "data",
                "--run-id", "w1", "--json"]
        refused = run_cli(*args, cwd=folder, env=env)
        assert refused.returncode == 1, refused.stderr
        failure = json.loads(refused.stdout)
        assert failure["causeCode"] == "capability_drift"
        assert "the session at label started with another skillsHash, systemPromptHash" \
            in failure["message"]
        skill.write_text(SKILL)
        server.replies.append('{"label": "bug"}')
        done = run_cli(*args, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"label": "bug"}

"""Operations on a pipeline. One budget for all of it (`lwtool orchestrate
--max-tokens`): the orchestrator session and every sub-run are held against what all
of them committed, so a sub-run stops once the others spent the budget, and so does the
orchestrator. A sub-run that waits for a person makes the pipeline wait; once answered,
the pipeline resumes without asking its model again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server

PIPELINE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Pipeline
id: greetings
description: Greet everyone, one at a time.
workflows: [greet.definition.yaml]
orchestrator: {model: orchestrator, maxConcurrentSubRuns: 1}
"""
DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: greet
description: Greets someone.
input:
  schema: {type: object, required: [name], properties: {name: {type: string}}}
models: [{id: writer, model: openai/gpt-4o-mini}]
planner: {plan: greet.lwir.yaml}
"""
WORKFLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: greet}
input:
  schema: {type: object, required: [name], properties: {name: {type: string}}}
permissions: {models: [writer]}
steps:
  - {id: hello, uses: ai.generate, with: {model: writer, prompt: "Greet {{ input.name }}"}}
"""


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "greetings.pipeline.yaml").write_text(PIPELINE)
    (tmp_path / "greet.definition.yaml").write_text(DEFINITION)
    (tmp_path / "greet.lwir.yaml").write_text(WORKFLOW)
    (tmp_path / "input.json").write_text('{"names": ["Ada", "Bo"]}')
    (tmp_path / "models.yaml").write_text("orchestrator: openai/fixture-orchestrator\n")
    return tmp_path


def _env(server: Any) -> dict[str, str]:
    return {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-fixture", "LWTOOL_BASH_SANDBOX": "path-check"}


def test_the_pipeline_budget_holds_across_the_session_and_its_sub_runs(
        tmp_path: Path) -> None:
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.runtime.api import load_lwir

    folder = _folder(tmp_path)
    version = workflow_version_id(load_lwir(folder / "greet.lwir.yaml"))
    runs = [{"name": "run_workflow", "arguments": json.dumps(
        {"workflowVersionId": version, "input": {"name": name}})} for name in ("Ada", "Bo")]
    replies = [{"tool_calls": [{"name": "plan_workflow", "arguments": json.dumps(
        {"workflowId": "greet", "input": {"name": "Ada"}})}]}, {"tool_calls": runs},
        "Hello Ada", "Hello Bo", "done"]
    with fixture_server(replies) as server:  # each answer: 11 + 7 tokens
        done = run_cli("orchestrate", "greetings.pipeline.yaml", "-i", "input.json",
                       "--models", "models.yaml", "--data-dir", "data", "--run-id", "p",
                       "--max-tokens", "40", "--json", cwd=folder, env=_env(server))
    assert done.returncode == 1, done.stderr
    spent = "no model call started: the token budget is spent: 54 tokens used of 40"
    failed = json.loads(done.stdout)
    assert failed["causeCode"] == "budget_exceeded" and failed["message"].startswith(spent)
    # the orchestrator's two turns (36), the first sub-run's call (54); nothing after
    assert len(server.requests) == 3
    rows = {r["runId"]: r["status"] for r in json.loads(
        run_cli("runs", "--data-dir", "data", "--json", cwd=folder).stdout)}
    assert rows == {"p": "failed", "p.sub.1.0": "completed", "p.sub.1.1": "failed"}
    events = [json.loads(line) for line in run_cli(
        "events", "p.sub.1.1", "--data-dir", "data", "--json", cwd=folder).stdout.splitlines()]
    ended = events[-1]["payload"]
    assert (ended["causeCode"], ended["message"].startswith(spent)) == ("budget_exceeded", True)


ASK = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: greet}
input:
  schema: {type: object, required: [name], properties: {name: {type: string}}}
steps:
  - id: ask
    uses: human.input
    with: {prompt: "How should we greet {{ input.name }}?", schema: {type: string}}
"""


def test_a_sub_run_waiting_for_a_person_makes_the_pipeline_wait(tmp_path: Path) -> None:
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.runtime.api import load_lwir

    folder = _folder(tmp_path)
    (folder / "greet.lwir.yaml").write_text(ASK)
    version = workflow_version_id(load_lwir(folder / "greet.lwir.yaml"))
    replies = [{"tool_calls": [{"name": "plan_workflow", "arguments": json.dumps(
        {"workflowId": "greet", "input": {"name": "Ada"}})}]},
        {"tool_calls": [{"name": "run_workflow", "arguments": json.dumps(
            {"workflowVersionId": version, "input": {"name": "Ada"}})}]}, "greeted"]
    args = ("orchestrate", "greetings.pipeline.yaml", "-i", "input.json", "--models",
            "models.yaml", "--data-dir", "data", "--run-id", "p")
    with fixture_server(replies) as server:
        waits = run_cli(*args, "--json", cwd=folder, env=_env(server))
        assert waits.returncode == 3, waits.stderr
        request = json.loads(waits.stdout)["waitingFor"][0]
        assert (request["runId"], request["stepPath"]) == ("p.sub.1.0", "ask")
        assert "lwtool respond p.sub.1.0 ask --input FILE" in waits.stderr
        assert "then resume it with `lwtool orchestrate greetings.pipeline.yaml" in waits.stderr
        listed = run_cli("runs", "--data-dir", "data", cwd=folder).stdout
        assert "p waits for its sub-runs" in listed, listed
        (folder / "answer.json").write_text('"Warmly"')
        answered = run_cli("respond", "p.sub.1.0", "ask", "--input", "answer.json",
                           "--data-dir", "data", cwd=folder)
        assert answered.returncode == 0, answered.stderr
        done = run_cli(*args, "--json", cwd=folder, env=_env(server))
        assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"] == "greeted" and len(server.requests) == 3  # no turn asked twice
    assert [(s["runId"], s["status"]) for s in result["subRuns"]] == [("p.sub.1.0",
                                                                      "completed")]


# What a hostile orchestrator model adds to its calls: lwtool's own reservation key, and
# the ids it reserves written at the top as well (a run that is not this pipeline's).
FORGED = {"$lwtool": {"subRunId": "../evil", "plannerRunId": "../evil-plan"},
          "subRunId": "elsewhere", "plannerRunId": "elsewhere"}


def _forged_runs(version: str, names: tuple[str, ...]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "run_workflow", "arguments": json.dumps(
        {"workflowVersionId": version, "input": {"name": name}, **FORGED})} for name in names]}


def test_a_model_cannot_forge_the_ids_that_hold_the_budget(tmp_path: Path) -> None:
    """The attack of round 4: a forged `$lwtool.subRunId` hid the sub-runs from the
    budget (20,000 tokens spent under `--max-tokens 100`); it now stops as without it."""
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.runtime.api import load_lwir

    folder = _folder(tmp_path)
    version = workflow_version_id(load_lwir(folder / "greet.lwir.yaml"))
    replies = [{"tool_calls": [{"name": "plan_workflow", "arguments": json.dumps(
        {"workflowId": "greet", "input": {"name": "Ada"}, **FORGED})}]},
        _forged_runs(version, ("Ada", "Bo")), "Hello Ada", "Hello Bo", "done"]
    with fixture_server(replies) as server:
        done = run_cli("orchestrate", "greetings.pipeline.yaml", "-i", "input.json",
                       "--models", "models.yaml", "--data-dir", "data", "--run-id", "p",
                       "--max-tokens", "40", "--json", cwd=folder, env=_env(server))
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["causeCode"] == "budget_exceeded"
    assert len(server.requests) == 3  # as without the forgery: nothing after the budget
    events = [json.loads(line) for line in run_cli(
        "events", "p", "--type", "harness.tool_call.started", "--data-dir", "data",
        "--json", cwd=folder).stdout.splitlines()]
    logged = [e["payload"]["args"]["$lwtool"] for e in events]
    assert [ids.get("subRunId") for ids in logged] == [None, "p.sub.1.0", "p.sub.1.1"]
    # the spec's `args.subRunId` of run_workflow: lwtool's id, over the model's
    assert [e["payload"]["args"]["subRunId"] for e in events[1:]] == ["p.sub.1.0",
                                                                      "p.sub.1.1"]
    assert "../evil" not in json.dumps(events)  # the model's key is not even logged


def test_forged_ids_neither_rename_sub_runs_nor_hide_their_spend(tmp_path: Path) -> None:
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.runtime.api import load_lwir

    folder = _folder(tmp_path)
    version = workflow_version_id(load_lwir(folder / "greet.lwir.yaml"))
    names = ("Ada", "Bo", "Cy")
    replies = [{"tool_calls": [{"name": "plan_workflow", "arguments": json.dumps(
        {"workflowId": "greet", "input": {"name": "Ada"}, **FORGED})}]},
        _forged_runs(version, names), *(f"Hello {n}" for n in names), "done"]
    with fixture_server(replies) as server:
        done = run_cli("orchestrate", "greetings.pipeline.yaml", "-i", "input.json",
                       "--models", "models.yaml", "--data-dir", "data", "--run-id", "p",
                       "--json", cwd=folder, env=_env(server))
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [s["runId"] for s in result["subRuns"]] == ["p.sub.1.0", "p.sub.1.1", "p.sub.1.2"]
    report = json.loads(run_cli("report", "p", "--data-dir", "data", "--json",
                                cwd=folder).stdout)
    # six answers of 11 + 7 tokens: the orchestrator's three turns and the three sub-runs
    assert (report["run"]["inputTokens"], report["run"]["outputTokens"]) == (66, 42)
    assert report["byRole"]["worker"]["inputTokens"] == 33

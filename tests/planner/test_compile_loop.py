"""The planner compile loop with scripted planner models: a draft missing a needs entry
is accepted after inference, a draft needing two repairs, a draft that never validates
(planner_validation_exhausted, every draft kept), findings shaped for a model, the
request (input validated, tools described, never run), identical drafts collapsing to
one version, and drift of the planner's model or system prompt on resume."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, ToolRegistry, local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.planner.compile_loop import plan_workflow
from lwtool.planner.emit import lwir_yaml
from lwtool.record.errors import CapabilityDriftError

DEFINITION: dict[str, Any] = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "WorkflowDefinition", "id": "loan",
    "description": "Summarize a loan application with its credit score.",
    "input": {"schema": {"type": "object", "required": ["applicant"],
                         "properties": {"applicant": {"type": "string"}}}},
    "output": {"schema": {"type": "string"}},
    "models": [{"id": "gpt-4o-mini", "model": "offline"}], "tools": ["creditScore"],
    "planner": {"model": "planner", "maxWorkflowRevisions": 2, "system": "Keep it short."}}
GOOD: dict[str, Any] = {
    "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
    "metadata": {"name": "loan", "version": "0.1.0"},
    "input": {"schema": DEFINITION["input"]["schema"]}, "output": {"schema": {"type": "string"}},
    "permissions": {"tools": ["creditScore"], "models": ["gpt-4o-mini"]},
    "steps": [
        {"id": "credit", "uses": "tool.call",
         "with": {"tool": "creditScore", "args": {"applicant": "{{ input.applicant }}"}}},
        {"id": "summarize", "uses": "ai.generate", "needs": ["credit"],
         "with": {"model": "gpt-4o-mini",
                  "prompt": "Summarize.\nScore: {{ steps.credit.output.score }}"},
         "output": {"mode": "text"}}]}


def _tools(calls: list[Any] | None = None) -> ToolRegistry:
    tools = ToolRegistry()

    def credit_score(args: Any) -> dict[str, int]:
        if calls is not None:
            calls.append(args)
        return {"score": 700}

    tools.register("creditScore", credit_score, "Credit score of an applicant.",
                   input_schema={"type": "object", "properties": {"applicant": {}}})
    return tools


def _submit(draft: Any) -> dict[str, Any]:
    return {"toolCalls": [{"name": "submit_workflow", "arguments": draft}]}


def _plan(tmp_path: Path, replies: list[Any], run_id: str = "p1", **kw: Any) -> Any:
    model = ScriptedModel(replies)
    result = asyncio.run(plan_workflow(local_world(tmp_path / "data"),
                                       kw.pop("definition", DEFINITION),
                                       kw.pop("run_input", {"applicant": "Ann"}),
                                       kw.pop("tools", _tools()), model, run_id=run_id, **kw))
    return result, model


def _broken(*edits: tuple[list[Any], Any]) -> dict[str, Any]:
    draft = copy.deepcopy(GOOD)
    for path, value in edits:
        target = draft
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return draft


def test_a_valid_first_draft_is_locked_and_the_tools_never_run(tmp_path: Path) -> None:
    calls: list[Any] = []
    result, model = _plan(tmp_path, [_submit(GOOD), "done"], tools=_tools(calls))
    assert result.drafts == 1 and result.lwir == GOOD and calls == []
    from lwtool.canonical.digest import workflow_version_id

    assert result.version_id == workflow_version_id(GOOD)
    assert model.calls[0][0]["content"].endswith("\n\nKeep it short.")  # definition's system
    request = json.loads(model.calls[0][1]["content"].split("\n\n", 1)[1])
    assert request["tools"] == [{"name": "creditScore",
                                 "description": "Credit score of an applicant.",
                                 "inputSchema": {"type": "object",
                                                 "properties": {"applicant": {}}}}]
    assert request["modelSlots"] == [{"id": "gpt-4o-mini"}]  # no provider strings
    assert request["input"] == {"applicant": "Ann"} and "planner" not in request["modelSlots"]
    # the version's record: validated, and the definition's tools' schemas pinned
    from lwtool.lock.version_record import surface_hash

    meta = local_world(tmp_path / "data").version_meta(result.version_id)
    assert meta is not None and meta["validation"]["ok"] is True
    assert meta["capabilities"] == {"tools": {"creditScore": surface_hash(
        _tools().tools["creditScore"])}, "models": ["gpt-4o-mini"]}


def test_a_missing_needs_entry_is_inferred_not_a_repair(tmp_path: Path) -> None:
    draft = _broken((["steps", 1, "needs"], []))
    del draft["steps"][1]["needs"]
    result, _ = _plan(tmp_path, [_submit(draft)])
    assert result.drafts == 1 and result.lwir["steps"][1]["needs"] == ["credit"]
    assert result.added_needs == [{"step": "summarize", "need": "credit"}]


def test_two_repairs_then_valid(tmp_path: Path) -> None:
    first = _broken((["steps", 1, "with", "model"], "gpt-5"))
    second = _broken((["steps", 0, "uses"], "tool.cal"))
    result, model = _plan(tmp_path, [_submit(first), _submit(second), _submit(GOOD)])
    assert result.drafts == 3
    answers = [json.loads(m["content"]) for m in model.calls[2] if m["role"] == "tool"]
    assert [a["accepted"] for a in answers] == [False, False]
    finding = answers[0]["findings"][0]
    assert finding["code"] == "permissions.unknown_model"
    assert finding["pointer"] == "/steps/1/with/model" and finding["text"] == "gpt-5"
    assert "Instead" in finding["fix"] and answers[0]["next"].startswith("Fix every")
    assert answers[1]["findings"][0]["code"] == "step.unknown_type"


def test_a_draft_that_never_validates_is_planner_validation_exhausted(tmp_path: Path) -> None:
    bad = _broken((["steps", 1, "with", "model"], "gpt-5"))
    with pytest.raises(RunFailedError) as info:
        _plan(tmp_path, [_submit(bad)] * 5, run_id="p2")
    assert info.value.cause_code == "planner_validation_exhausted"
    assert "after 3 drafts (maxWorkflowRevisions: 2)" in info.value.message
    world = local_world(tmp_path / "data")
    assert world.get_run("p2").status == "failed"
    answers = [e.payload["result"] for e in world.events("p2", ["harness.tool_call.succeeded"])]
    kept = [asyncio.run(world.get_artifact(a["draftRef"])) for a in answers]
    assert len(kept) == 3 and all(json.loads(k) == bad for k in kept)


def test_a_planner_that_never_submits_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(RunFailedError, match="without submitting a valid workflow"):
        _plan(tmp_path, ["I think it should call creditScore."])


@pytest.mark.parametrize("bad", [[], "text", {"kind": "Workflow"}, {"steps": "x"}, None])
def test_hostile_drafts_get_findings_not_crashes(tmp_path: Path, bad: Any) -> None:
    result, model = _plan(tmp_path, [_submit(bad), _submit(GOOD)])
    answer = json.loads(next(m for m in model.calls[1] if m["role"] == "tool")["content"])
    if isinstance(bad, dict):  # a draft: checked, with findings
        assert answer["accepted"] is False and answer["findings"] and result.drafts == 2
    else:  # not even an object: the call is refused before the tool
        assert answer["error"].startswith("refused: ") and result.drafts == 1


def test_input_and_tools_are_checked_before_planning(tmp_path: Path) -> None:
    with pytest.raises(RunFailedError) as info:
        _plan(tmp_path, [_submit(GOOD)], run_input={"applicant": 7})
    assert info.value.cause_code == "input_schema_error"
    with pytest.raises(RunFailedError) as info:
        _plan(tmp_path, [_submit(GOOD)], tools=ToolRegistry())
    assert info.value.cause_code == "runtime_config_error"
    assert "creditScore" in info.value.message


def test_identical_drafts_collapse_to_one_version(tmp_path: Path) -> None:
    one, _ = _plan(tmp_path, [_submit(GOOD)], run_id="a")
    two, _ = _plan(tmp_path, [_submit(copy.deepcopy(GOOD))], run_id="b")
    assert one.version_id == two.version_id
    assert local_world(tmp_path / "data").version_ids().count(one.version_id) == 1


def test_drift_of_the_planner_model_or_system_on_resume(tmp_path: Path) -> None:
    _plan(tmp_path, [_submit(GOOD)], run_id="d")
    again, _ = _plan(tmp_path, [_submit(GOOD)], run_id="d")  # finished: same answer
    assert again.drafts == 1
    changed = copy.deepcopy(DEFINITION)
    changed["planner"]["system"] = "Be thorough."
    with pytest.raises(CapabilityDriftError):
        _plan(tmp_path, [_submit(GOOD)], run_id="d", definition=changed)


def test_the_yaml_reads_like_a_person_wrote_it_and_round_trips() -> None:
    from ruamel.yaml import YAML

    text = lwir_yaml(GOOD)
    assert text.startswith("apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata:\n")
    literal = ("      prompt: |-\n        Summarize.\n"
               "        Score: {{ steps.credit.output.score }}\n")
    assert literal in text
    assert YAML(typ="safe").load(text) == GOOD


def test_run_definition_from_python_plans_then_runs(tmp_path: Path) -> None:
    from lwtool import run_definition

    world = local_world(tmp_path / "data")
    planner_model = ScriptedModel([_submit(GOOD)])
    result = asyncio.run(run_definition(
        DEFINITION, {"applicant": "Ann"}, world=world, tools=_tools(),
        planner_model=planner_model, run_id="py1"))
    assert result["runId"] == "py1" and result["status"] == "completed"
    assert result["output"].startswith("offline")  # the definition's slot: offline
    assert world.get_run("py1.plan").status == "completed"
    again = asyncio.run(run_definition(
        DEFINITION, {"applicant": "Ann"}, world=world, tools=_tools(),
        planner_model=ScriptedModel([]), run_id="py1"))
    assert again["output"] == result["output"]  # finished: reported, nothing asked again
    from lwtool.runtime.api import WorkflowInvalid

    with pytest.raises(WorkflowInvalid):
        asyncio.run(run_definition({"kind": "WorkflowDefinition"}, {}, world=world))

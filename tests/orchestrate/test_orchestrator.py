"""The orchestrator: its three tools' dispatch and return shapes, refused calls, plan
once and run many, fan-out bounded by maxConcurrentSubRuns, the manifest and its drift,
and the deprecated array form."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.orchestrate.api import orchestrate, run_orchestration
from lwtool.orchestrate.pipeline import load_pipeline
from lwtool.record.errors import RunFailedError
from tests.conftest import run_cli
from tests.orchestrate.helpers import DOUBLE, Doubler, double_version, last_result, write_pipeline


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    write_pipeline(tmp_path)
    return tmp_path


def _run(folder: Path, replies: list[Any], tools: Any = None, run_id: str = "pipe",
         **changes: Any) -> dict[str, Any]:
    pipeline = dataclasses.replace(load_pipeline(folder / "numbers.pipeline.yaml"),
                                   model=ScriptedModel(replies), **changes)
    return asyncio.run(orchestrate(pipeline, {"numbers": [2, 3, 4]},
                                   world=local_world(folder / "data"),
                                   tools=tools or Doubler().registry(), run_id=run_id))


def _events(folder: Path, run_id: str, kind: str) -> list[dict[str, Any]]:
    return [e.payload for e in local_world(folder / "data").events(run_id, [kind])]


def test_orchestrator_plan_run_and_start_workflow_tool_dispatch(folder: Path) -> None:
    seen: dict[str, Any] = {}

    def run_two_and_start(messages: list[dict[str, Any]]) -> dict[str, Any]:
        seen["plan"] = last_result(messages)
        version = seen["plan"]["workflowVersionId"]
        return {"toolCalls": [
            {"name": "run_workflow", "arguments": {"workflowVersionId": version,
                                                   "input": {"n": 2}}},
            {"name": "run_workflow", "arguments": {"workflowVersionId": version,
                                                   "input": {"n": 3}}},
            {"name": "start_workflow", "arguments": {"workflowId": "double",
                                                     "input": {"n": 4}}}]}

    def answer(messages: list[dict[str, Any]]) -> str:
        seen["results"] = [json.loads(m["content"]) for m in messages[-3:]]
        first = seen["results"][0]
        seen["file"] = json.loads((folder / "data/runs/pipe/scratch/outputs"
                                   / f"{first['runId']}.json").read_text())
        return "4, 6, 8"

    result = _run(folder, [{"toolCalls": [{"name": "plan_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 1}}}]}, run_two_and_start, answer])
    version = double_version(folder)
    assert seen["plan"] == {"workflowVersionId": version,
                            "summary": f"double planned as {version}"}
    first, second, started = seen["results"]
    assert sorted(first) == ["outputPath", "outputRef", "outputSummary", "runId", "status"]
    assert first["runId"] == "pipe.sub.1.0" and first["status"] == "completed"
    assert first["outputSummary"] == '{"value": 4}' and seen["file"] == {"value": 4}
    assert first["outputPath"] == "/mnt/scratch/own/outputs/pipe.sub.1.0.json"
    assert first["outputRef"].startswith("artifact://sha256:")
    assert second["outputSummary"] == '{"value": 6}'
    assert started == {"workflowVersionId": version, "runId": "pipe.sub.1.2",
                       "output": {"value": 8}, "status": "completed"}
    assert result["output"] == "4, 6, 8" and result["status"] == "completed"
    assert [s["runId"] for s in result["subRuns"]] == ["pipe.sub.1.0", "pipe.sub.1.1",
                                                       "pipe.sub.1.2"]
    # the call reserved its sub-run before it started; the sub-run names its parent
    calls = _events(folder, "pipe", "harness.tool_call.started")
    assert calls[1]["args"]["$lwtool"]["subRunId"] == "pipe.sub.1.0"
    assert calls[1]["args"]["subRunId"] == "pipe.sub.1.0"  # where the spec reserves it
    links = _events(folder, "pipe.sub.1.0", "RunStarted")[0]["links"]
    assert links == {"parentRunId": "pipe", "parentCallId": "session#1.0",
                     "plannerRunId": "pipe.plan.0.0"}
    # and so do the sub-run's worker sessions
    sessions = _events(folder, "pipe.sub.1.0", "harness.session.started")
    assert sessions and {s.get("parentRunId") for s in sessions} == {"pipe"}
    assert "parentRunId" not in _events(folder, "pipe", "harness.session.started")[0]
    assert not (folder / "data/runs/pipe").exists()  # the pipeline's scratch is gone


def test_the_orchestrator_manifest_and_its_stores(folder: Path) -> None:
    _run(folder, ["nothing to do"])
    manifest = _events(folder, "pipe", "harness.session.started")[0]["manifest"]
    pipeline = load_pipeline(folder / "numbers.pipeline.yaml")
    assert manifest["maxConcurrentSubRuns"] == 2
    assert manifest["availableWorkflows"] == [pipeline.workflows[0].hash]
    assert f"pipelines/{pipeline.key}:rw" in manifest["memoryStoreIds"]
    assert "workflows/double:ro" in manifest["memoryStoreIds"]
    assert set(manifest) >= {"harnessId", "orchestratorModelSlotId", "systemPromptHash",
                             "skillsHash", "globalToolsHash", "bashCapabilitiesHash"}
    assert (folder / "data/memory/pipelines" / pipeline.key).is_dir()


def test_calls_the_orchestrator_got_wrong_fail_and_the_session_goes_on(folder: Path) -> None:
    told: list[Any] = []

    def note(messages: list[dict[str, Any]]) -> str:
        told.extend(json.loads(m["content"]) for m in messages[-3:])
        return "sorry"

    result = _run(folder, [{"toolCalls": [
        {"name": "plan_workflow", "arguments": {"workflowId": "triple", "input": {}}},
        {"name": "run_workflow", "arguments": {"workflowVersionId": "sha256:0",
                                               "input": {"n": 1}}},
        {"name": "start_workflow", "arguments": {"workflowId": "double",
                                                 "input": {"n": "two"}}}]}, note])
    assert result["status"] == "completed" and result["subRuns"] == []
    assert "unknown workflowId 'triple' (this pipeline has: double)" in told[0]["error"]
    assert "unknown workflowVersionId 'sha256:0'" in told[1]["error"]
    assert "does not fit double's input schema at n: 'two' is not of type 'integer'" \
        in told[2]["error"]
    assert len(_events(folder, "pipe", "harness.tool_call.failed")) == 3
    # a refusal is what the model reads, whole: no exception class, no local path
    assert told[0]["error"] == ("tool 'plan_workflow' refused the call: unknown workflowId "
                                "'triple' (this pipeline has: double)")
    assert not any("/" in t["error"] or ".py" in t["error"] for t in told)


def test_plan_once_run_many(folder: Path) -> None:
    """A planned workflow planned again for the same input in the same pipeline run is
    not planned again; its version runs as many sub-runs as asked."""
    planner = ScriptedModel([{"toolCalls": [{"name": "submit_workflow",
                                             "arguments": _lwir(DOUBLE)}]}, "submitted"])
    (folder / "numbers.pipeline.yaml").write_text(
        (folder / "numbers.pipeline.yaml").read_text().replace(
            "[double.definition.yaml]", "[square.definition.yaml]"))

    def run_three(messages: list[dict[str, Any]]) -> dict[str, Any]:
        version = last_result(messages)["workflowVersionId"]
        return {"toolCalls": [{"name": "run_workflow", "arguments": {
            "workflowVersionId": version, "input": {"n": n}}} for n in (1, 2, 3)]}

    plan = {"name": "plan_workflow", "arguments": {"workflowId": "square", "input": {"n": 1}}}
    pipeline = dataclasses.replace(load_pipeline(folder / "numbers.pipeline.yaml"),
                                   model=ScriptedModel([{"toolCalls": [plan]},
                                                        {"toolCalls": [plan]}, run_three,
                                                        "done"]))
    world = local_world(folder / "data")
    result = asyncio.run(orchestrate(pipeline, {}, world=world,
                                     tools=Doubler().registry(), run_id="pipe",
                                     planner_model=planner, step_timeout=30))
    planners = [r.run_id for r in world.list_runs() if ".plan." in r.run_id]
    assert planners == ["pipe.plan.0.0"]  # the second plan_workflow reused the first
    assert [s["status"] for s in result["subRuns"]] == ["completed"] * 3
    assert len(planner.calls) == 1  # one planner session, ended by its accepted draft


def _lwir(text: str) -> dict[str, Any]:
    from ruamel.yaml import YAML

    value: dict[str, Any] = YAML(typ="safe", pure=True).load(text)
    return value


@pytest.mark.parametrize(("bound", "peak"), [(2, 2), (10, 6)])
def test_orchestrator_fan_out_is_bounded_by_max_concurrent_sub_runs(
        folder: Path, bound: int, peak: int) -> None:
    doubler = Doubler(delay=0.2)

    def run_six(messages: list[dict[str, Any]]) -> dict[str, Any]:
        version = last_result(messages)["workflowVersionId"]
        return {"toolCalls": [{"name": "run_workflow", "arguments": {
            "workflowVersionId": version, "input": {"n": n}}} for n in range(6)]}

    result = _run(folder, [{"toolCalls": [{"name": "plan_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 1}}}]}, run_six, "done"],
        tools=doubler.registry(), max_concurrent_sub_runs=bound)
    assert [s["status"] for s in result["subRuns"]] == ["completed"] * 6
    assert doubler.peak == peak


def test_max_sub_runs_bounds_how_many_sub_runs_a_pipeline_starts(folder: Path) -> None:
    """One turn asked for five sub-runs and a later turn for one more: the first three
    run (maxSubRuns), the others are refused, and the model is told why."""
    told: list[Any] = []

    def run_five(messages: list[dict[str, Any]]) -> dict[str, Any]:
        version = last_result(messages)["workflowVersionId"]
        told.append(version)
        return {"toolCalls": [{"name": "run_workflow", "arguments": {
            "workflowVersionId": version, "input": {"n": n}}} for n in range(5)]}

    def one_more(messages: list[dict[str, Any]]) -> dict[str, Any]:
        told.extend(json.loads(m["content"]) for m in messages[-5:])
        return {"toolCalls": [{"name": "start_workflow", "arguments": {
            "workflowId": "double", "input": {"n": 9}}}]}

    result = _run(folder, [{"toolCalls": [{"name": "plan_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 1}}}]}, run_five, one_more,
        lambda messages: told.append(json.loads(messages[-1]["content"])) or "done"],
        max_sub_runs=3)
    assert [s["runId"] for s in result["subRuns"]] == ["pipe.sub.1.0", "pipe.sub.1.1",
                                                       "pipe.sub.1.2"]
    refused = ("tool 'run_workflow' refused the call: this pipeline run has started its 3 "
               "sub-runs (maxSubRuns 3): no more are started; answer with what they returned")
    assert [t.get("error") for t in told[1:6]] == [None, None, None, refused, refused]
    assert told[6] == {"error": refused.replace("run_workflow", "start_workflow")}
    assert len(_events(folder, "pipe", "harness.tool_call.failed")) == 3


def test_a_pipeline_run_id_leaves_room_for_its_sub_runs_ids(folder: Path) -> None:
    with pytest.raises(ValueError, match="too long for a pipeline run .116 characters.*"
                                         "use at most 115"):
        _run(folder, ["done"], run_id="p" * 116)
    assert not (folder / "data").exists() or local_world(folder / "data").list_runs() == []
    assert _run(folder, ["done"], run_id="p" * 115)["status"] == "completed"


@pytest.mark.parametrize("change", [{"system": "Another prompt."},
                                    {"max_concurrent_sub_runs": 3}])
def test_a_changed_orchestrator_is_capability_drift(folder: Path,
                                                    change: dict[str, Any]) -> None:
    _run(folder, ["done"])
    with pytest.raises(RunFailedError) as failed:
        _run(folder, ["done"], **change)
    assert failed.value.cause_code == "capability_drift"


def test_the_array_form_warns_once_and_runs(folder: Path) -> None:
    import lwtool.orchestrate.api as api

    api._warned = False
    with pytest.warns(DeprecationWarning, match="LWF_DEP_ORCHESTRATOR"):
        result = asyncio.run(run_orchestration(
            workflows=[folder / "double.definition.yaml"], input={"n": 5},
            orchestrator={"model": ScriptedModel([{"toolCalls": [{
                "name": "start_workflow", "arguments": {"workflowId": "double",
                                                        "input": {"n": 5}}}]},
                lambda m: str(last_result(m)["output"]["value"])]),
                "maxConcurrentSubRuns": 1},
            world=local_world(folder / "data"), tools=Doubler().registry()))
    assert result["output"] == "10"
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second call does not warn again
        asyncio.run(run_orchestration(
            workflows=[folder / "double.definition.yaml"], input={},
            orchestrator={"model": ScriptedModel(["nothing"])},
            world=local_world(folder / "data"), tools=Doubler().registry()))


def test_the_inspector_and_the_trace_link_a_pipeline_run_with_its_sub_runs(
        folder: Path) -> None:
    from starlette.testclient import TestClient

    from lwtool.observe.otel import spans
    from lwtool.ui.app import create_app
    from lwtool.world.local import LocalWorld

    _run(folder, [{"toolCalls": [{"name": "start_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 2}}}]}, "done"])
    world = LocalWorld(folder / "data", read_only=True)
    with TestClient(create_app(world), base_url="http://127.0.0.1") as client:
        pipeline = client.get("/runs/pipe").text
        sub = client.get("/runs/pipe.sub.0.0").text
    assert 'start_workflow → <a class="sub-run" href="/runs/pipe.sub.0.0">' in pipeline
    assert '<a class="mono" id="parent-run" href="/runs/pipe">pipe</a>' in sub

    def read(run_id: str) -> tuple[list[Any], dict[str, Any] | None]:
        return world.events(run_id), world.get_version(world.get_run(run_id).version_id)

    found = spans("pipe", *read("pipe"), read)
    by_id = {s.context.span_id: s for s in found}
    sub_root = next(s for s in found if s.attributes.get("lwtool.run.id") == "pipe.sub.0.0")
    assert sub_root.parent is not None
    assert by_id[sub_root.parent.span_id].name == "execute_tool start_workflow"
    assert len({s.context.trace_id for s in found}) == 1  # one trace for the pipeline
    world.close()


def test_create_harness_offers_each_workflow_as_a_typed_tool(folder: Path) -> None:
    import lwtool

    square = lwtool.define_workflow(
        "square", description="Squares n.", input={"type": "object", "required": ["n"],
                                                   "properties": {"n": {"type": "integer"}}},
        tools=["double"], planner={"plan": str(folder / "double.lwir.yaml")})
    double = lwtool.as_harness_workflow(lwtool.load_definition(folder / "double.definition.yaml"))
    assert (double.name, double.description) == ("double", "Doubles a number.")
    assert double.parameters["required"] == ["n"]
    seen: list[Any] = []

    def answer(messages: list[dict[str, Any]]) -> str:
        seen.extend(json.loads(m["content"]) for m in messages[-3:])
        return "ok"

    model = lwtool.ScriptedModel([{"toolCalls": [
        {"name": "double", "arguments": {"n": 2}}, {"name": "double", "arguments": {"n": 5}},
        {"name": "square", "arguments": {"n": 3}}]}, answer])
    agent = lwtool.create_harness(workflows=[double, square], model=model,
                                  system="Use the workflows.", max_concurrent_sub_runs=2)
    world = local_world(folder / "data")
    result = asyncio.run(agent.run({"task": "numbers"}, world=world,
                                   tools=Doubler().registry(), run_id="agent"))
    assert result["status"] == "completed" and result["output"] == "ok"
    assert [s["output"] for s in seen] == [{"value": 4}, {"value": 10}, {"value": 6}]
    assert [s["runId"] for s in result["subRuns"]] == ["agent.sub.0.0", "agent.sub.0.1",
                                                       "agent.sub.0.2"]
    request = json.loads(world.events("agent", ["harness.model.called"])[0].payload[
        "request"]["messages"][-1]["content"])
    assert request == {"task": "numbers"}
    tools = world.events("agent", ["harness.model.called"])[0].payload["request"]["tools"]
    offered = {t["function"]["name"]: t["function"] for t in tools}
    assert offered["double"]["parameters"]["required"] == ["n"]
    assert "plan_workflow" not in offered
    started = world.events("agent", ["harness.tool_call.started"])[0].payload["args"]
    assert started["n"] == 2 and started["$lwtool"]["subRunId"] == "agent.sub.0.0"


def test_a_sub_runs_roles_see_the_orchestrators_scratch(tmp_path: Path) -> None:
    from lwtool.harness.workspace import StepWorkspace

    space = StepWorkspace(tmp_path, "pipe.sub.1.0", "twice", planner_run_id="pipe.plan.0.0",
                          pipeline_run="pipe")
    mounts = {m.target: (m.source.relative_to(tmp_path).as_posix(), m.writable)
              for m in space.mounts()}
    assert mounts["/mnt/scratch/own"] == ("runs/pipe/sub-runs/pipe.sub.1.0/steps/twice/"
                                          "scratch", True)
    assert mounts["/mnt/scratch/from-orchestrator"] == ("runs/pipe/scratch", False)
    assert mounts["/mnt/scratch/from-planner"] == (
        "runs/pipe/sub-runs/pipe.plan.0.0/scratch", False)


def test_a_pipeline_run_is_called_by_its_pipelines_id(folder: Path) -> None:
    """`lwtool runs`, the inspector's run page and the OTel trace's root span name the
    orchestrator session by its pipeline's id (they said HarnessSession, blank and
    `workflow`); its sub-runs by their workflow's name."""
    from lwtool.observe.otel import spans
    from lwtool.ui.pages import run_page

    _run(folder, [{"toolCalls": [{"name": "start_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 1}}}]}, "started"])
    listed = run_cli("runs", "--json", "--data-dir", str(folder / "data"))
    names = {r["runId"]: r["workflow"] for r in json.loads(listed.stdout)}
    assert names["pipe"] == "numbers" and "double" in names.values(), names
    world = local_world(folder / "data")
    record, events = world.get_run("pipe"), world.events("pipe")
    version = world.get_version(record.version_id)
    assert run_page(world, record, events, [], 0)["run"]["name"] == "numbers"
    assert spans("pipe", events, version)[0].name == "invoke_workflow numbers"


def test_a_pipelines_usage_is_the_whole_pipelines(folder: Path) -> None:
    """The result's usage counts the orchestrator, its planner sessions and sub-runs
    (as `lwtool report` does), with costUsd and priced/unpriced call counts."""
    result = _run(folder, [{"toolCalls": [{"name": "run_workflow", "arguments": {
        "workflowId": "double", "input": {"n": 1}}}]}, "done"])
    usage = result["usage"]
    assert set(usage) >= {"inputTokens", "outputTokens", "costUsd", "pricedCalls",
                          "unpricedCalls"}
    report = json.loads(run_cli("report", "pipe", "--json", "--data-dir",
                                str(folder / "data")).stdout)
    assert usage == report["run"] and usage["unpricedCalls"] == 2  # scripted: unpriced

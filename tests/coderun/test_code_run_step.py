"""code.run steps in workflow runs: the tools proxy (caller code, permissions,
memoized calls), pins refused at run time, the log artifact, output contracts, the
run's code timeout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_workflow
from lwtool.harness.workflow import WorkflowHarness
from lwtool.runtime.interpreter import start_run
from lwtool.tools import ToolRegistry
from tests.coderun.helpers import code_step, workflow

CALLS = """export async function run({ input, tools }) {
  const a = await tools.lookup({ key: input.key });
  let refused = "";
  try { await tools.secret({}); } catch (e) { refused = e.message; }
  let unknown = "";
  try { await tools.nothere({}); } catch (e) { unknown = e.message; }
  console.log("looked up", a.value);
  return { value: a.value, refused, unknown };
}"""


def _lookup(args: Any) -> Any:
    return {"value": str(args["key"]).upper()}


def test_tool_calls_from_code_are_recorded_with_caller_code(tmp_path: Path) -> None:
    world = local_world(tmp_path)
    doc = workflow(code_step("c", CALLS), tools=["lookup", "nothere"])
    result = asyncio.run(run_workflow(doc, {"key": "ab"}, world=world, run_id="r",
                                      tools={"lookup": _lookup, "secret": lambda a: "leak"}))
    out = result["output"]
    assert out["value"] == "AB"
    assert "'secret' is not in permissions.tools" in out["refused"]
    assert "'nothere' is not registered" in out["unknown"]
    started = [e.payload for e in world.events("r", ["harness.tool_call.started"])]
    assert [(p["callId"], p["caller"], p["toolName"]) for p in started] == [
        ("c#a1.code.1", "code", "lookup"), ("c#a1.code.2", "code", "secret"),
        ("c#a1.code.3", "code", "nothere")]
    succeeded = world.events("r", ["harness.tool_call.succeeded"])
    assert [e.payload["result"] for e in succeeded] == [{"value": "AB"}]
    completed = world.events("r", ["StepCompleted"])[0].payload["envelope"]
    log = asyncio.run(world.get_artifact(completed["artifacts"][0]))
    assert log == b"looked up AB\n"


def test_a_broken_pin_is_refused_at_run_time(tmp_path: Path) -> None:
    doc = workflow(code_step("c", "export async function run() { return 1; }"))
    doc["steps"][0]["with"]["files"]["main.ts"]["content"] = \
        "export async function run() { return 2; }"
    world = local_world(tmp_path)
    with pytest.raises(RunFailedError) as info:  # validation would refuse it first
        asyncio.run(start_run(world, doc, {}, ToolRegistry(), {}, "r"))
    assert info.value.cause_code == "runtime_config_error"
    assert "pinned to" in info.value.message and "not loaded" in info.value.message
    assert not world.events("r", ["harness.execute_step.succeeded"])


def test_output_that_breaks_its_contract_fails_the_step(tmp_path: Path) -> None:
    doc = workflow(code_step("c", "export async function run() { return { score: 'high' }; }",
                             output={"mode": "object", "schema": {
                                 "type": "object", "properties": {"score": {"type": "number"}}}}))
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(doc, {}, world=local_world(tmp_path)))
    assert info.value.cause_code == "step_schema_error"
    assert "/score" in info.value.message


def test_a_throwing_step_fails_with_the_code_error(tmp_path: Path) -> None:
    doc = workflow(code_step("c", "export async function run({ input }) {\n"
                             "  return input.signals.length / 10;\n}"))
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(doc, {"signals": 3}, world=local_world(tmp_path)))
    assert info.value.cause_code == "step_failed" and info.value.failed_step_path == "c"
    assert "code.run failed: " in info.value.message


def test_the_run_code_timeout_and_the_step_timeout(tmp_path: Path) -> None:
    loop = "export async function run() { for (;;) {} }"
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(workflow(code_step("c", loop)), {},
                                 world=local_world(tmp_path / "a"),
                                 harness=WorkflowHarness(code_timeout=0.5)))
    assert "longer than 0.5 s" in info.value.message
    own = code_step("c", loop, sandbox={"timeoutMs": 300})
    with pytest.raises(RunFailedError) as info:
        asyncio.run(run_workflow(workflow(own), {}, world=local_world(tmp_path / "b")))
    assert "longer than 0.3 s" in info.value.message


def test_code_reads_earlier_outputs_through_its_input(tmp_path: Path) -> None:
    doc = workflow(
        {"id": "fetch", "uses": "tool.call", "with": {"tool": "lookup", "args": {"key": "q"}}},
        code_step("c", "export async function run({ input }) { return input.got.value + '!'; }",
                  needs=["fetch"], input={"got": "{{ steps.fetch.output }}"}),
        tools=["lookup"])
    result = asyncio.run(run_workflow(doc, {}, world=local_world(tmp_path),
                                      tools={"lookup": _lookup}))
    assert result["output"] == "Q!"


def test_events_show_the_execute_step_sequence(tmp_path: Path) -> None:
    world = local_world(tmp_path)
    asyncio.run(run_workflow(workflow(code_step("c", "export async function run() "
                                                "{ return 1; }")), {}, world=world, run_id="r"))
    kinds = [e.type for e in world.events("r") if e.step_path == "c"]
    assert kinds == ["StepAttemptStarted", "harness.session.started",
                     "harness.execute_step.started", "harness.execute_step.succeeded",
                     "harness.session.completed", "StepCompleted"]
    assert json.dumps(world.events("r", ["harness.execute_step.started"])[0].payload).count(
        '"stepKind": "code.run"') == 1


def test_without_deno_the_step_says_how_to_get_it(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from lwtool.coderun.deno import deno_binary

    monkeypatch.setenv("LWTOOL_DENO", str(tmp_path / "no-deno"))
    deno_binary.cache_clear()
    try:
        with pytest.raises(RunFailedError) as info:
            asyncio.run(run_workflow(workflow(code_step("c", "export async function run() "
                                                         "{ return 1; }")), {},
                                     world=local_world(tmp_path / "data")))
    finally:
        deno_binary.cache_clear()
    assert info.value.cause_code == "runtime_config_error"
    assert "LWTOOL_DENO=" in info.value.message and "not an executable" in info.value.message

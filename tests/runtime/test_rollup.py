"""Usage rolled up over the runs a run stands on keeps report.py's rule: costUsd is null
when every model call in scope was unpriced, 0 only when there was no call at all. A
linked run without model calls must not turn an unpriced total into a false 0."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, local_world, run_definition
from lwtool.calls.scripted import ScriptedModel
from lwtool.record.rollup import rolled_usage
from tests.conftest import MINIMAL_HEADER
from tests.planner.test_compile_loop import DEFINITION, GOOD, _tools


def test_an_unpriced_planner_and_a_run_without_calls_total_null(tmp_path: Path) -> None:
    tool_only = copy.deepcopy(GOOD)
    tool_only["steps"] = tool_only["steps"][:1]  # the tool call alone: no model call
    tool_only["permissions"]["models"] = []
    tool_only["output"] = {"schema": {"type": "object"}}
    definition = {**DEFINITION, "output": {"schema": {"type": "object"}}}
    planner = ScriptedModel([{"toolCalls": [{"name": "submit_workflow",
                                             "arguments": tool_only}]}, "done"])
    world = local_world(tmp_path / "data")
    result = asyncio.run(run_definition(definition, {"applicant": "Ann"}, world=world,
                                        tools=_tools(), run_id="r1", planner_model=planner))
    usage = rolled_usage(world, "r1")
    assert usage["byRole"]["planner"]["unpricedCalls"] >= 1
    assert usage["total"]["pricedCalls"] == 0
    assert usage["total"]["costUsd"] is None  # unpriced, not free
    assert result["usage"] == usage["total"]


def _tool_once(fail_first: list[bool]) -> Any:
    from lwtool.tools import ToolRegistry

    def t(args: Any) -> Any:
        if fail_first and fail_first.pop():
            raise ValueError("not yet")
        return {"ok": True}

    registry = ToolRegistry()
    registry.register("t", t)
    return registry


def _reads_of_usage(world: Any) -> list[Any]:
    """The typed reads of `world.events` from now on (rolled_usage reads by type)."""
    reads: list[Any] = []
    events = world.events

    def counted(run_id: str, types: Any = None) -> Any:
        if types:
            reads.append(list(types))
        return events(run_id, types)

    world.events = counted
    return reads


def test_a_run_without_model_calls_reports_its_usage_without_reading_it_back(
        tmp_path: Path) -> None:
    from lwtool.runtime.interpreter import start_run

    world = local_world(tmp_path / "data")
    reads = _reads_of_usage(world)
    doc = {**copy.deepcopy(MINIMAL_HEADER),
           "steps": [{"id": "a", "uses": "tool.call", "with": {"tool": "t"}}]}
    result = asyncio.run(start_run(world, doc, {}, _tool_once([]), {}, "r1"))
    assert reads == []
    assert result["usage"] == rolled_usage(world, "r1")["total"]
    assert result["usage"]["costUsd"] == 0.0 and result["usage"]["unpricedCalls"] == 0


def test_a_reply_committed_before_a_retry_still_counts(tmp_path: Path) -> None:
    """The retried execution makes no model call (the reply comes from the log): the
    usage is read back, and holds that reply."""
    from lwtool.runtime.interpreter import resume_run, start_run

    world = local_world(tmp_path / "data")
    doc = {**copy.deepcopy(MINIMAL_HEADER), "steps": [
        {"id": "write", "uses": "ai.generate", "with": {"model": "gpt-4o-mini",
                                                        "prompt": "Say hi"}},
        {"id": "a", "uses": "tool.call", "needs": ["write"], "with": {"tool": "t"}}]}
    tools, models = _tool_once([True]), {"gpt-4o-mini": "offline"}
    with pytest.raises(RunFailedError):
        asyncio.run(start_run(world, doc, {}, tools, models, "r1"))
    reads = _reads_of_usage(world)
    result = asyncio.run(resume_run(world, "r1", tools, models, retry=True))
    assert result["usage"]["unpricedCalls"] == 1 and result["usage"]["costUsd"] is None
    assert result["usage"] == rolled_usage(world, "r1")["total"]
    assert reads  # read back


@pytest.mark.parametrize(("started", "found"), [
    # lwtool's reservation: the ids it derives from the call id
    ({"callId": "s#1.0", "toolName": "run_workflow",
      "args": {"$lwtool": {"subRunId": "p.sub.1.0", "callId": "s#1.0"}}},
     {"subRunId": "p.sub.1.0"}),
    # written before reservations moved under `$lwtool`: the orchestrator's tools only
    ({"callId": "s#1.0", "toolName": "start_workflow",
      "args": {"subRunId": "p.sub.1.0", "plannerRunId": "p.plan.1.0"}},
     {"subRunId": "p.sub.1.0", "plannerRunId": "p.plan.1.0"}),
    ({"callId": "s#1.0", "toolName": "fetch", "args": {"subRunId": "p.sub.1.0"}}, {}),
    # another run's id, or one of another call, is no reservation of this call's
    ({"callId": "s#1.0", "toolName": "run_workflow",
      "args": {"$lwtool": {"subRunId": "../evil"}, "subRunId": "p.sub.1.0"}}, {}),
    ({"callId": "s#1.0", "toolName": "run_workflow",
      "args": {"subRunId": "p.sub.2.0"}}, {}),
    ({"callId": "s#1.0", "toolName": "run_workflow", "args": ["p.sub.1.0"]}, {}),
    ({"toolName": "run_workflow", "args": {"subRunId": "p.sub.1.0"}}, {}),
])
def test_reserved_ids_are_the_ones_lwtool_derives(started: dict[str, Any],
                                                   found: dict[str, str]) -> None:
    from lwtool.record.ids import reserved_ids

    assert reserved_ids("p", started) == found


def test_a_callers_reserved_key_is_taken_away() -> None:
    from lwtool.record.ids import without_reserved

    assert without_reserved({"n": 1, "$lwtool": {"subRunId": "x"}}) == {"n": 1}
    assert without_reserved(["$lwtool"]) == ["$lwtool"]

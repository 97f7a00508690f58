"""Usage rolled up over the runs a run stands on keeps report.py's rule: costUsd is null
when every model call in scope was unpriced, 0 only when there was no call at all. A
linked run without model calls must not turn an unpriced total into a false 0."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path

from lwtool import local_world, run_definition
from lwtool.calls.scripted import ScriptedModel
from lwtool.record.rollup import rolled_usage
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

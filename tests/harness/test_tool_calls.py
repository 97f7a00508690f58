"""harness.tool_call.* for calls by a model or by code: `started` is committed before
the tool runs, `succeeded` carries the result (or a ref when large) and durationMs,
`failed` the error; a committed call is replayed, never re-run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import ToolRegistry, local_world
from lwtool.calls.tool_calls import ToolCallFailed, call_tool
from lwtool.canonical.digest import workflow_version_id
from lwtool.record.journal import Journal
from lwtool.record.run_state import RunState
from lwtool.world.base import NewEvent
from tests.conftest import run_cli

VERSION = workflow_version_id({"steps": []})


def _state(data: Path, tools: ToolRegistry, journal: Journal | None = None) -> RunState:
    world = local_world(data)
    try:
        world.get_run("run_calls")
    except Exception:  # noqa: BLE001 - first use: create it
        world.register_version(VERSION, {"steps": []})
        world.create_run("run_calls", VERSION, {}, {},
                         [NewEvent("RunStarted", {})])
    return RunState(world, "run_calls", VERSION, {}, {}, tools, {},
                    journal or Journal(), asyncio.Semaphore(4))


def test_started_is_committed_before_the_tool_runs(tmp_path: Path) -> None:
    seen: list[list[str]] = []
    tools = ToolRegistry()
    state: RunState

    @tools.tool()
    def lookup(args: Any) -> Any:
        seen.append([e.type for e in state.world.events("run_calls")])
        return {"value": args["key"].upper()}

    state = _state(tmp_path / "data", tools)
    result = asyncio.run(call_tool(state, "s", tools.tools["lookup"], {"key": "x"}, "code",
                                   "s#code.0"))
    state.close()
    assert result == {"value": "X"}
    assert seen == [["RunStarted", "harness.tool_call.started"]]
    events = state.world.events("run_calls")[1:]
    assert [e.type for e in events] == ["harness.tool_call.started",
                                        "harness.tool_call.succeeded"]
    assert events[0].payload == {"callId": "s#code.0", "caller": "code",
                                 "toolName": "lookup", "args": {"key": "x"}}
    assert events[1].payload["result"] == {"value": "X"}
    assert isinstance(events[1].payload["durationMs"], int)


def test_a_failed_call_records_its_error_and_replays_it(tmp_path: Path) -> None:
    calls: list[Any] = []
    tools = ToolRegistry()

    @tools.tool()
    async def broken(args: Any) -> Any:
        calls.append(args)
        raise ValueError("no such record")

    state = _state(tmp_path / "data", tools)
    with pytest.raises(ToolCallFailed, match="ValueError: no such record"):
        asyncio.run(call_tool(state, "s", tools.tools["broken"], {}, "model", "s#0.0", turn=0))
    state.close()
    failed = state.world.events("run_calls", ["harness.tool_call.failed"])[0].payload
    # a model reads the error: the tool's file by name, no local path (round 4, item 7)
    assert failed["error"] == ("tool 'broken' raised ValueError: no such record (at "
                               "test_tool_calls.py:69 in broken)")
    assert failed["traceback"].rstrip().endswith("ValueError: no such record")
    started = state.world.events("run_calls", ["harness.tool_call.started"])[0].payload
    assert started["turn"] == 0 and started["caller"] == "model"
    replayed = _state(tmp_path / "data", tools,
                      Journal.from_events(state.world.events("run_calls")))
    with pytest.raises(ToolCallFailed, match="no such record"):
        asyncio.run(call_tool(replayed, "s", tools.tools["broken"], {}, "model", "s#0.0", 0))
    replayed.close()
    assert len(calls) == 1


def test_committed_results_are_replayed_large_ones_by_ref(tmp_path: Path) -> None:
    calls: list[Any] = []
    tools = ToolRegistry()

    @tools.tool()
    def big(args: Any) -> Any:
        calls.append(args)
        return {"blob": "x" * 300_000}

    state = _state(tmp_path / "data", tools)
    first = asyncio.run(call_tool(state, "s", tools.tools["big"], {}, "code", "s#code.0"))
    state.close()
    succeeded = state.world.events("run_calls", ["harness.tool_call.succeeded"])[0].payload
    assert "result" not in succeeded and succeeded["resultRef"].startswith("artifact://")
    replayed = _state(tmp_path / "data", tools,
                      Journal.from_events(state.world.events("run_calls")))
    again = asyncio.run(call_tool(replayed, "s", tools.tools["big"], {}, "code", "s#code.0"))
    replayed.close()
    assert again == first and len(calls) == 1


def test_events_caller_filter(tmp_path: Path) -> None:
    tools = ToolRegistry()
    tools.register("echo", lambda args: args)
    state = _state(tmp_path / "data", tools)
    asyncio.run(call_tool(state, "s", tools.tools["echo"], 1, "code", "s#code.0"))
    asyncio.run(call_tool(state, "m", tools.tools["echo"], 2, "model", "m#0.0", turn=0))
    state.close()

    def ids(caller: str) -> list[tuple[str, str]]:
        out = run_cli("events", "run_calls", "--data-dir", str(tmp_path / "data"), "--caller",
                      caller, "--json").stdout.splitlines()
        return [(e["type"], e["payload"]["callId"]) for e in map(json.loads, out)]

    assert ids("code") == [("harness.tool_call.started", "s#code.0"),
                           ("harness.tool_call.succeeded", "s#code.0")]
    assert ids("model") == [("harness.tool_call.started", "m#0.0"),
                            ("harness.tool_call.succeeded", "m#0.0")]

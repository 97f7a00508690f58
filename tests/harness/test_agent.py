"""The agent loop in harness sessions: tool calls recorded and fed back, concurrent calls
in one turn, misbehaving models contained, the turn limit, manifests that pin the
model, prompt and tools, and the whole loop through litellm against a loopback
OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from lwtool import RunFailedError, ToolRegistry, local_world
from lwtool.calls.agent_loop import MAX_RESULT_CHARS, tool_specs
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.session import run_session
from lwtool.harness.session_spec import SessionSpec
from lwtool.record.errors import CapabilityDriftError
from tests.fixtures.openai_server import fixture_server


class Probe:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.active = 0
        self.peak = 0

    def registry(self) -> ToolRegistry:
        tools = ToolRegistry()

        @tools.tool(description="Add two numbers.", input_schema={
            "type": "object", "required": ["a", "b"],
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
        async def add(args: dict[str, Any]) -> Any:
            self.calls.append(("add", args))
            self.active += 1
            self.peak = max(self.peak, self.active)
            await asyncio.sleep(0.05)
            self.active -= 1
            return {"sum": args["a"] + args["b"]}

        @tools.tool(description="Fail on purpose.")
        def broken(args: dict[str, Any]) -> Any:
            self.calls.append(("broken", args))
            raise ValueError("disk on fire")

        @tools.tool(description="A very large result.")
        def huge(args: dict[str, Any]) -> Any:
            self.calls.append(("huge", args))
            return "x" * (MAX_RESULT_CHARS * 5)

        return tools


def _session(tmp_path: Path, replies: list[Any], probe: Probe, run_id: str = "s1",
             **spec: Any) -> Any:
    world = local_world(tmp_path / "data")
    model = ScriptedModel(replies)
    result = asyncio.run(run_session(world, SessionSpec("agent", model, "What is 1+2 and 3+4?",
                                                        **spec),
                                     probe.registry(), run_id=run_id))
    return result, world, model


def _types(world: Any, run_id: str = "s1") -> list[str]:
    return [e.type for e in world.events(run_id)]


def test_tool_calls_in_one_turn_run_concurrently_and_are_fed_back(tmp_path: Path) -> None:
    probe = Probe()
    result, world, model = _session(tmp_path, [
        {"toolCalls": [{"name": "add", "arguments": {"a": 1, "b": 2}},
                       {"name": "add", "arguments": {"a": 3, "b": 4}}]},
        "3 and 7"], probe)
    assert (result.text, result.turns, result.tool_calls) == ("3 and 7", 2, 2)
    assert probe.peak == 2  # both calls of the turn ran at once
    last = model.calls[-1]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "tool"]
    assert [json.loads(m["content"]) for m in last[2:]] == [{"sum": 3}, {"sum": 7}]
    assert last[1]["tool_calls"][0]["function"] == {"name": "add",
                                                   "arguments": '{"a": 1, "b": 2}'}
    assert _types(world) == [
        "RunStarted", "harness.session.started", "harness.model.called",
        "harness.model.responded", "harness.tool_call.started", "harness.tool_call.started",
        "harness.tool_call.succeeded", "harness.tool_call.succeeded", "harness.model.called",
        "harness.model.responded", "harness.session.completed", "RunCompleted"]
    called = world.events("s1", ["harness.model.called"])
    assert "messagesFrom" not in called[0].payload["request"]
    assert called[1].payload["request"]["messagesFrom"] == 1  # each message logged once
    assert [m["role"] for m in called[1].payload["request"]["messages"]] == [
        "assistant", "tool", "tool"]
    started = world.events("s1", ["harness.tool_call.started"])
    assert [(e.payload["caller"], e.payload["callId"], e.payload["turn"]) for e in started] == [
        ("model", "session#0.0", 0), ("model", "session#0.1", 0)]
    assert world.get_run("s1").status == "completed"
    assert result.usage["inputTokens"] > 0


def test_a_finished_session_reports_its_result_without_calling_anything(tmp_path: Path) -> None:
    probe = Probe()
    replies = [{"toolCalls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, "3"]
    _session(tmp_path, replies, probe)
    again, _, model = _session(tmp_path, replies, probe)
    assert again.text == "3" and model.calls == [] and len(probe.calls) == 1


@pytest.mark.parametrize(("call", "error"), [
    ({"name": "nope", "arguments": {}}, "refused: there is no tool 'nope' (tools: add, broken, "
                                        "huge)"),
    ({"name": "add", "arguments": "{not json"}, "refused: the arguments are not valid JSON"),
    ({"name": "add", "arguments": "[1, 2]"}, "refused: the arguments must be a JSON object"),
    ({"name": "broken", "arguments": {}}, "tool 'broken' raised ValueError: disk on fire"),
])
def test_bad_tool_calls_are_recorded_and_the_model_is_told(tmp_path: Path, call: dict[str, Any],
                                                           error: str) -> None:
    probe = Probe()
    result, world, model = _session(tmp_path, [{"toolCalls": [call]}, "sorry"], probe)
    assert result.text == "sorry"
    told = json.loads(model.calls[-1][-1]["content"])
    assert told["error"].startswith(error)
    failed = world.events("s1", ["harness.tool_call.failed"])
    assert len(failed) == 1 and failed[0].payload["error"].startswith(error)
    assert [c[0] for c in probe.calls] == (["broken"] if call["name"] == "broken" else [])


def test_a_huge_result_is_cut_for_the_model_and_kept_whole_in_the_log(tmp_path: Path) -> None:
    probe = Probe()
    result, world, model = _session(tmp_path, [
        {"toolCalls": [{"name": "huge", "arguments": {}}]}, "done"], probe)
    shown = model.calls[-1][-1]["content"]
    assert len(shown) < MAX_RESULT_CHARS + 200 and "[cut: the result has" in shown
    succeeded = world.events("s1", ["harness.tool_call.succeeded"])[0].payload
    whole = asyncio.run(world.get_artifact(succeeded["resultRef"]))
    assert len(json.loads(whole)) == MAX_RESULT_CHARS * 5  # over the inline limit


def test_a_model_that_never_stops_fails_at_the_turn_limit(tmp_path: Path) -> None:
    probe = Probe()
    forever = [{"toolCalls": [{"name": "add", "arguments": {"a": n, "b": 0}}]}
               for n in range(10)]
    with pytest.raises(RunFailedError) as info:
        _session(tmp_path, forever, probe, max_turns=3)
    assert info.value.cause_code == "step_failed"
    assert "turn limit (3 turns)" in info.value.message
    world = local_world(tmp_path / "data")
    assert _types(world)[-2:] == ["harness.session.failed", "RunFailed"]
    assert world.get_run("s1").status == "failed" and len(probe.calls) == 3


def test_resume_with_another_tool_or_prompt_is_capability_drift(tmp_path: Path) -> None:
    world = local_world(tmp_path / "data")
    spec = SessionSpec("agent", ScriptedModel(["ok"]), "hello", max_turns=2)
    tools = ToolRegistry()
    tools.register("t", lambda args: 1, "one")
    run = asyncio.run(run_session(world, spec, tools, run_id="s2"))
    assert run.text == "ok"
    changed = ToolRegistry()
    changed.register("t", lambda args: 2, "one")  # same name, other code
    with pytest.raises(CapabilityDriftError, match="allowedToolsHash"):
        asyncio.run(run_session(world, spec, changed, run_id="s2"))
    other = SessionSpec("agent", ScriptedModel(["ok"]), "hello, again", max_turns=2)
    with pytest.raises(CapabilityDriftError, match="another session"):
        asyncio.run(run_session(world, other, tools, run_id="s2"))


def test_tool_specs_take_json_schema_or_pydantic_models() -> None:
    class Query(BaseModel):
        text: str
        limit: int = 5

    tools = ToolRegistry()
    tools.register("search", lambda args: [], "Search the docs.", input_schema=Query)
    tools.register("free", lambda args: None)
    specs = {s["function"]["name"]: s["function"] for s in tool_specs(tools)}
    assert specs["search"]["parameters"]["required"] == ["text"]
    assert specs["search"]["parameters"]["properties"]["limit"]["default"] == 5
    assert specs["search"]["description"] == "Search the docs."
    assert specs["free"]["parameters"] == {"type": "object"}


def test_the_agent_loop_through_litellm_with_native_tool_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replies: list[Any] = [{"tool_calls": [{"name": "add", "arguments": '{"a": 2, "b": 5}'}]},
                          "the sum is 7"]
    with fixture_server(replies) as server:
        for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL"):
            monkeypatch.setenv(name, server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fixture")
        probe = Probe()
        world = local_world(tmp_path / "data")
        result = asyncio.run(run_session(world, SessionSpec(
            "agent", "openai/gpt-4o-mini", "Add 2 and 5.", system="Use the tools."),
            probe.registry(), run_id="s3"))
    assert result.text == "the sum is 7" and probe.calls == [("add", {"a": 2, "b": 5})]
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "broken", "huge"]
    assert first["messages"][0] == {"role": "system", "content": "Use the tools."}
    assert second["messages"][-1]["role"] == "tool"
    assert json.loads(second["messages"][-1]["content"]) == {"sum": 7}
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "add"
    responded = world.events("s3", ["harness.model.responded"])
    assert responded[0].payload["response"]["toolCalls"][0]["name"] == "add"
    assert responded[0].payload["response"]["usage"]["inputTokens"] == 11


def test_tool_fingerprints_are_the_same_in_every_process(tmp_path: Path) -> None:
    """A tool whose code holds nested code (a comprehension, an inner function) must
    fingerprint alike in a new process, or every resume would be capability drift."""
    import subprocess
    import sys

    (tmp_path / "nested_tool.py").write_text(
        "def tool(args):\n    def inner(x):\n        return x\n"
        "    return [inner(a) for a in args]\n")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from nested_tool import tool; "
              "from lwtool.tools import Tool; from lwtool.harness.fingerprints import "
              "tool_fingerprint; print(tool_fingerprint(Tool('t', tool)))")
    prints = {subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True,
                             capture_output=True, text=True).stdout for _ in range(2)}
    assert len(prints) == 1 and next(iter(prints)).startswith("sha256:")

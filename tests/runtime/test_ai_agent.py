"""ai.agent: a model that calls tools until it is done. Offline (the offline model calls
each offered tool once, then answers), against the loopback OpenAI server, and with a
scripted model: each turn and tool call recorded; a SIGKILL after turn 2's tool result
replays with one more model call and no tool call; a tool outside `with.tools` is not
called (the model is told, the step goes on); maxTurns exhausted fails
max_turns_exceeded; the final reply is held to the output mode and repaired."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lwtool import RunFailedError, ScriptedModel, ToolRegistry, local_world, run_workflow
from lwtool.record.report import usage_report
from tests.conftest import run_cli
from tests.fixtures.openai_server import fixture_server

SUMMARY = {"type": "object", "required": ["summary"],
           "properties": {"summary": {"type": "string"}}}
TOOLS_PY = '''
import json, pathlib
from lwtool.tools import ToolRegistry

tools = ToolRegistry()

def _count(name):
    with open("calls.log", "a") as log:
        log.write(name + "\\n")

@tools.tool(input_schema={"type": "object", "required": ["query"],
                          "properties": {"query": {"type": "string"}}})
def search(args):
    """Search the notes."""
    _count("search")
    return {"hits": ["lwtool replays killed runs"]}

@tools.tool(input_schema={"type": "object", "properties": {"url": {"type": "string"}}})
def fetch_page(args):
    """Fetch a page."""
    _count("fetch_page")
    return {"text": "a page about durable runs"}

@tools.tool()
def delete_everything(args):
    """Delete everything."""
    _count("delete_everything")
    return {"deleted": True}
'''


def _doc(tools: list[str], max_turns: int = 4, **more: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"id": "research", "uses": "ai.agent", "with": {
        "model": "m", "tools": tools, "maxTurns": max_turns,
        "system": "You research.", "prompt": "Find out about {{ input.topic }}"},
        "output": {"mode": "object", "schema": SUMMARY}, **more}
    return {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "research"},
            "permissions": {"models": ["m"],
                            "tools": ["search", "fetch_page", "delete_everything"]},
            "steps": [step]}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    (tmp_path / "in.json").write_text('{"topic": "durable runs"}')
    return tmp_path


def _calls(folder: Path) -> list[str]:
    log = folder / "calls.log"
    return log.read_text().split() if log.exists() else []


def _events(folder: Path, run_id: str, kind: str) -> list[dict[str, Any]]:
    done = run_cli("events", run_id, "--data-dir", "d", "--type", kind, "--json",
                   cwd=folder)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_offline_model_drives_a_three_turn_agent(folder: Path) -> None:
    (folder / "flow.lwir.json").write_text(json.dumps(_doc(["search", "fetch_page"])))
    (folder / "models.json").write_text('{"m": "offline"}')
    done = run_cli("run", "flow.lwir.json", "-i", "in.json", "--tools", "tools.py:tools",
                   "--models", "models.json", "--data-dir", "d", "--run-id", "r", "--json",
                   cwd=folder)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["output"]["summary"]
    assert "a page about durable runs" in summary  # the answer read the tools' results
    assert _calls(folder) == ["fetch_page", "search"]  # each once, in the order offered
    turns = _events(folder, "r", "harness.model.responded")
    assert [e["payload"]["turn"] for e in turns] == [0, 1, 2]
    called = _events(folder, "r", "harness.tool_call.started")
    assert [(e["payload"]["callId"], e["payload"]["toolName"], e["payload"]["caller"])
            for e in called] == [("research#0.0", "fetch_page", "model"),
                                 ("research#1.0", "search", "model")]
    # The request offered exactly the step's tools, under the names providers accept
    request = _events(folder, "r", "harness.model.called")[0]["payload"]["request"]
    assert [t["function"]["name"] for t in request["tools"]] == ["fetch_page", "search"]
    report = run_cli("report", "r", "--data-dir", "d", "--json", cwd=folder)
    steps = json.loads(report.stdout)["steps"]
    assert steps["research"]["inputTokens"] > 0 and steps["research"]["unpricedCalls"] == 3, steps


def test_a_kill_after_turn_twos_tool_result_replays_one_model_call_and_no_tool(
        folder: Path) -> None:
    """A 3-turn agent against the loopback OpenAI server, SIGKILLed right after turn 2's
    tool result is committed: the replay sends the model one request (turn 3) and calls
    no tool; the output is the uninterrupted run's."""
    (folder / "flow.lwir.json").write_text(json.dumps(_doc(["search", "fetch_page"])))
    (folder / "models.json").write_text('{"m": "openai/gpt-4o-mini"}')
    replies = [{"tool_calls": [{"name": "search", "arguments": '{"query": "replay"}'}]},
               {"tool_calls": [{"name": "fetch_page", "arguments": '{"url": "x"}'}]},
               '{"summary": "runs replay"}']
    args = ["--tools", "tools.py:tools", "--models", "models.json", "--data-dir", "d",
            "--json"]
    with fixture_server(replies) as server:
        env = {"OPENAI_API_BASE": server.base_url, "OPENAI_BASE_URL": server.base_url,
               "OPENAI_API_KEY": "sk-fixture",
               "LWTOOL_FAULT_KILL_AFTER": "harness.tool_call.succeeded@research#2"}
        killed = run_cli("run", "flow.lwir.json", "-i", "in.json", "--run-id", "k", *args,
                         cwd=folder, env=env)
        assert killed.returncode == -9, killed.stderr
        assert len(server.requests) == 2 and _calls(folder) == ["search", "fetch_page"]
        env.pop("LWTOOL_FAULT_KILL_AFTER")
        done = run_cli("replay", "k", *args, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"summary": "runs replay"}
    assert len(server.requests) == 3  # turn 3 only
    assert _calls(folder) == ["search", "fetch_page"]  # no tool called again
    last = server.requests[2]["messages"]  # the resumed turn saw both committed results
    assert [m["content"] for m in last if m["role"] == "tool"] == [
        '{"hits": ["lwtool replays killed runs"]}', '{"text": "a page about durable runs"}']
    assert [t["function"]["name"] for t in server.requests[2]["tools"]] == [
        "fetch_page", "search"]
    again = run_cli("replay", "k", *args, cwd=folder, env=env)  # an ended run: its log
    assert json.loads(again.stdout)["output"] == {"summary": "runs replay"}
    assert len(server.requests) == 3


def _tools(log: list[str]) -> ToolRegistry:
    tools = ToolRegistry()
    for name in ("search", "fetch_page", "delete_everything"):
        tools.register(name, lambda args, name=name: log.append(name) or {"ok": name},
                       f"The {name} tool.", {"type": "object"})
    return tools


def _run(doc: dict[str, Any], model: ScriptedModel, tmp_path: Path,
         log: list[str]) -> dict[str, Any]:
    return asyncio.run(run_workflow(doc, {"topic": "x"}, world=local_world(tmp_path / "d"),
                                    models={"m": model}, tools=_tools(log)))


def test_a_tool_outside_the_steps_list_is_refused_to_the_model(tmp_path: Path) -> None:
    """Prompt injection: the model asks for a tool the workflow permits and the process
    registers, but the step does not offer. It is not called; the model reads why; the
    step goes on to its answer."""
    model = ScriptedModel([{"toolCalls": [{"name": "delete_everything", "arguments": {}}]},
                           '{"summary": "done without it"}'])
    log: list[str] = []
    result = _run(_doc(["search"]), model, tmp_path, log)
    assert result["output"] == {"summary": "done without it"}
    assert log == []  # never called
    told = [m for m in model.calls[1] if m["role"] == "tool"]
    assert "refused: there is no tool 'delete_everything' (tools: search)" in \
        told[0]["content"]
    failed = [e for e in result["events"] if e["type"] == "harness.tool_call.failed"]
    assert [e["payload"]["callId"] for e in failed] == ["research#0.0"]
    assert [t["function"]["name"] for t in model_tools(result)] == ["search"]


def model_tools(result: dict[str, Any]) -> list[dict[str, Any]]:
    called = next(e for e in result["events"] if e["type"] == "harness.model.called")
    return list(called["payload"]["request"]["tools"])


def test_max_turns_exhausted_fails_with_its_own_cause(tmp_path: Path) -> None:
    forever = {"toolCalls": [{"name": "search", "arguments": {"q": "again"}}]}
    model = ScriptedModel([forever] * 5)
    log: list[str] = []
    with pytest.raises(RunFailedError) as info:
        _run(_doc(["search"], max_turns=3), model, tmp_path, log)
    assert info.value.cause_code == "max_turns_exceeded"
    assert info.value.failed_step_path == "research"
    assert info.value.message == ("the session reached its turn limit (3 turns) without a "
                                  "final answer: its last turn still called search")
    assert len(model.calls) == 3 and log == ["search"] * 3


def test_a_final_reply_that_breaks_the_output_mode_is_repaired(tmp_path: Path) -> None:
    model = ScriptedModel([{"toolCalls": [{"name": "search", "arguments": {}}]},
                           "not json", '{"summary": "fixed"}'])
    log: list[str] = []
    repaired = _doc(["search"], max_turns=2, onFailure={"repair": {"mode": "self"}})
    result = _run(repaired, model, tmp_path / "a", log)
    assert result["output"] == {"summary": "fixed"}
    assert "does not fit" in model.calls[2][-1]["content"]
    assert log == ["search"]  # the repair turn came beside maxTurns 2
    unrepaired = ScriptedModel(["not json"])
    with pytest.raises(RunFailedError) as info:
        _run(_doc(["search"]), unrepaired, tmp_path / "b", [])
    assert info.value.cause_code == "step_schema_error"
    assert info.value.message.startswith("the agent's final reply breaks the output contract")


def test_usage_of_every_turn_is_the_steps(tmp_path: Path) -> None:
    model = ScriptedModel([{"toolCalls": [{"name": "search", "arguments": {}}]},
                           '{"summary": "s"}'])
    result = _run(_doc(["search"]), model, tmp_path, [])
    completed = next(e for e in result["events"]
                     if e["type"] == "harness.session.completed")
    turns = [e["payload"]["response"]["usage"]["inputTokens"] for e in result["events"]
             if e["type"] == "harness.model.responded"]
    assert len(turns) == 2 and completed["payload"]["usage"]["inputTokens"] == sum(turns)
    report = usage_report([_event(e) for e in result["events"]])
    assert report["steps"]["research"]["inputTokens"] == sum(turns)


def _event(data: dict[str, Any]) -> Any:
    from lwtool.world.base import Event

    return Event(seq=data["seq"], run_id=data["runId"], type=data["type"],
                 step_path=data.get("stepPath"), payload=data["payload"],
                 at=data.get("at", ""))


def _findings(folder: Path, doc: dict[str, Any], *flags: str) -> list[tuple[str, str]]:
    (folder / "flow.lwir.json").write_text(json.dumps(doc))
    found = run_cli("validate", "flow.lwir.json", "--format", "json", *flags, cwd=folder)
    return [(f["code"], f["pointer"]) for f in json.loads(found.stdout)["files"][0]["findings"]]


def test_validate_knows_the_steps_tools_turns_model_and_output(folder: Path) -> None:
    doc = _doc(["search", "send_mail"], max_turns=0)
    doc["permissions"]["models"] = ["other"]
    doc["steps"][0]["output"] = {"mode": "choice"}
    assert sorted(_findings(folder, doc)) == sorted([
        ("lwir.invalid_field", "/steps/0/with/maxTurns"),
        ("lwir.invalid_field", "/steps/0/output"),
        ("permissions.unknown_tool", "/steps/0/with/tools/1"),
        ("permissions.unknown_model", "/steps/0/with/model")])
    assert _findings(folder, _doc(["search"])) == []
    assert _findings(folder, _doc(["search"]), "--portable") == [
        ("portable.extension", "/steps/0/uses")]
    # --tools: a Python tool an agent offers is not held to permissions.network
    networked = _doc(["search"])
    networked["permissions"]["network"] = ["api.example.com"]
    assert _findings(folder, networked, "--tools", "tools.py:tools") == [
        ("tools.network_unenforced", "/steps/0/with/tools/0")]


def test_the_generator_api_writes_an_agent_step(tmp_path: Path) -> None:
    from lwtool.authoring.builders import Workflow, object_output

    flow = Workflow("research")
    flow.ai_agent("research", model="m", tools=["search", "fetch_page"], max_turns=3,
                  prompt="Find {{ input.topic }}", output=object_output(SUMMARY))
    document = flow.document()
    assert document["permissions"]["tools"] == ["fetch_page", "search"]
    assert document["permissions"]["models"] == ["m"]
    assert document["steps"][0]["with"] == {"model": "m", "tools": ["search", "fetch_page"],
                                           "prompt": "Find {{ input.topic }}", "maxTurns": 3}
    (tmp_path / "flow.lwir.json").write_text(json.dumps(document))
    assert run_cli("validate", "flow.lwir.json", cwd=tmp_path).returncode == 0


def test_the_inspector_shows_each_turn_and_tool_call(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from lwtool.ui.app import create_app

    model = ScriptedModel([{"toolCalls": [{"name": "search", "arguments": {"q": "one"}}]},
                           {"toolCalls": [{"name": "fetch_page", "arguments": {"u": "two"}}]},
                           '{"summary": "seen"}'])
    result = _run(_doc(["search", "fetch_page"]), model, tmp_path, [])
    with TestClient(create_app(local_world(tmp_path / "d")),
                    base_url="http://127.0.0.1") as client:
        page = client.get(f"/runs/{result['runId']}/step?path=research&attempt=1").text
    for call_id in ("research#0", "research#0.0", "research#1", "research#1.0", "research#2"):
        assert call_id in page, call_id
    assert "&#34;q&#34;: &#34;one&#34;" in page and "&#34;ok&#34;: &#34;fetch_page&#34;" in page
    assert "conversation (the messages, tool results included)" in page
    assert "final reply (raw text)" in page


def test_a_token_budget_stops_the_agent_between_turns(folder: Path) -> None:
    """The budget is held against every turn: spent after turn 1, the agent's second
    model call never starts (budget_exceeded); the tool turn 1 asked for did run."""
    (folder / "flow.lwir.json").write_text(json.dumps(_doc(["search", "fetch_page"])))
    (folder / "models.json").write_text('{"m": "offline"}')
    done = run_cli("run", "flow.lwir.json", "-i", "in.json", "--tools", "tools.py:tools",
                   "--models", "models.json", "--data-dir", "d", "--run-id", "b", "--json",
                   "--max-tokens", "5", cwd=folder)
    assert done.returncode == 1, done.stderr
    failed = json.loads(done.stdout)
    assert (failed["causeCode"], failed["failedStepPath"]) == ("budget_exceeded", "research")
    assert _calls(folder) == ["fetch_page"]
    assert len(_events(folder, "b", "harness.model.responded")) == 1


def test_the_readme_example_runs_offline_and_a_killed_run_replays_the_same(
        tmp_path: Path) -> None:
    """examples/agent: two offline turns; killed after its tool result, the replay
    prints exactly what the uninterrupted run printed (the same bytes: key order too)."""
    from tests.conftest import ROOT

    args = ["examples/agent/research.lwir.yaml", "-i", "examples/inputs/research.json",
            "--tools", "examples/tools.py:tools", "--models", "examples/models.offline.yaml",
            "--data-dir", str(tmp_path / "d")]
    whole = run_cli("run", *args, "--run-id", "whole", cwd=ROOT)
    assert whole.returncode == 0, whole.stderr
    assert '"id\\": \\"note-1\\"' in whole.stdout  # the answer read the tool's result
    killed = run_cli("run", *args, "--run-id", "k", cwd=ROOT, env={
        "LWTOOL_FAULT_KILL_AFTER": "harness.tool_call.succeeded@research"})
    assert killed.returncode == -9, killed.stderr
    replayed = run_cli("replay", "k", *args[3:], cwd=ROOT)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == whole.stdout


def test_a_sensitive_agent_step_keeps_its_turns_and_tool_calls_sealed(tmp_path: Path) -> None:
    """`sensitive: true`: the prompt, every reply, the tool arguments and results and
    the conversation are kept out of the log, each in a sealed artifact."""
    from lwtool.record.sensitive import MAGIC

    model = ScriptedModel([{"toolCalls": [{"name": "search",
                                           "arguments": {"q": "ASKED-0f3c9e"}}]},
                           '{"summary": "ANSWERED-71b2d4"}'])
    tools = ToolRegistry()
    tools.register("search", lambda args: {"hit": "FOUND-5ae81c"}, "Search.",
                   {"type": "object"})
    doc = _doc(["search"], sensitive=True)
    doc["steps"][0]["with"]["prompt"] = "About TOPIC-9d04aa"
    world = local_world(tmp_path / "d")
    result = asyncio.run(run_workflow(doc, {"topic": "x"}, world=world, models={"m": model},
                                      tools=tools))
    assert [m["content"] for m in model.calls[1] if m["role"] == "tool"] == [
        '{"hit": "FOUND-5ae81c"}']  # the model itself saw the result
    markers = ("ASKED-0f3c9e", "FOUND-5ae81c", "ANSWERED-71b2d4", "TOPIC-9d04aa")
    # (RunStarted records the scripted model's own script: the test's stand-in for a
    # provider's model string, not something the step wrote)
    logged = json.dumps([e.payload for e in world.events(result["runId"])
                         if e.type != "RunStarted"])
    assert not [m for m in markers if m in logged]
    stored = [asyncio.run(world.get_artifact(ref)) for ref in world.inline_artifact_refs()]
    holding = [data for data in stored if any(m.encode() in data for m in markers)]
    assert len(holding) >= 6  # args, result, replies, prompt, conversation, output
    assert all(data.startswith(MAGIC) for data in holding)  # each one sealed
    world.close()


def test_a_skill_given_at_run_time_reaches_the_agents_system_prompt(tmp_path: Path) -> None:
    """The README's offline `--skill` example: the skill is listed before the step's
    own system prompt in every turn's request."""
    from tests.conftest import ROOT

    done = run_cli("run", "examples/agent/research.lwir.yaml", "-i",
                   "examples/inputs/research.json", "--tools", "examples/tools.py:tools",
                   "--models", "examples/models.offline.yaml", "--skill",
                   "examples/skills/cite-notes", "--run-id", "cited", "--data-dir",
                   str(tmp_path / "d"), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    called = run_cli("events", "cited", "--type", "harness.model.called", "--json",
                     "--data-dir", str(tmp_path / "d"), cwd=ROOT)
    system = json.loads(called.stdout.splitlines()[0])["payload"]["request"]["messages"][0]
    assert system["content"].startswith("Available skills") and \
        "- cite-notes: Cite the team's notes by id" in system["content"]
    assert system["content"].index("cite-notes") < system["content"].index("You answer")


def test_a_secret_an_agents_tool_reads_is_masked_everywhere_the_run_writes(
        tmp_path: Path) -> None:
    """The step's grant reaches its tool (ctx.secret); the value, returned by the tool and
    repeated by the model, is `[secret:NAME]` in the events, artifacts, report and OTel
    export, while the model itself was given the masked form only."""
    secret = "ghp_agent0secret0value0f00d"
    tools = ToolRegistry()
    tools.register("search", lambda args, ctx: {"token": ctx.secret("TOKEN")}, "Search.",
                   {"type": "object"})
    model = ScriptedModel([{"toolCalls": [{"name": "search", "arguments": {}}]},
                           '{"summary": "the token is ' + secret + '"}'])
    doc = _doc(["search"], secrets=["TOKEN"])
    doc["permissions"]["secrets"] = ["TOKEN"]
    world = local_world(tmp_path / "d")
    result = asyncio.run(run_workflow(doc, {"topic": "x"}, world=world, models={"m": model},
                                      tools=tools, secrets={"TOKEN": secret}))
    assert result["output"] == {"summary": "the token is [secret:TOKEN]"}
    assert secret not in json.dumps(model.calls)  # the tool result it read was masked
    logged = json.dumps([e.payload for e in world.events(result["runId"])
                         if e.type != "RunStarted"])  # (RunStarted: the test's script)
    assert secret not in logged and "[secret:TOKEN]" in logged
    stored = [asyncio.run(world.get_artifact(ref)) for ref in world.inline_artifact_refs()]
    assert not [data for data in stored if secret.encode() in data]
    world.close()
    for command in (["report", result["runId"], "--json"],
                    ["export-otel", result["runId"], "--file", str(tmp_path / "t.json")]):
        done = run_cli(*command, "--data-dir", str(tmp_path / "d"))
        assert done.returncode == 0, done.stderr
        assert secret not in done.stdout
    assert secret not in (tmp_path / "t.json").read_text()

"""Tools from a real MCP server nobody here wrote (`mcp-server-time`, PyPI, over stdio):
`--tools servers.json` names them SERVER.TOOL for tool.call steps; a call's input is
checked against the schema the server lists, its structured result is the step's
output, an `isError` answer fails the step with the server's words; a run SIGKILLed
after the call replays without calling the server again; the server's process ends
with lwtool's, killed or not; a servers file lwtool cannot use, or a server that does
not start or answer, is one line (exit 2) and nothing is run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

WORKER_TOOLS = f"{ROOT / 'tests' / 'world' / 'worker_tools.py'}:tools"
pytestmark = pytest.mark.slow


def _servers(folder: Path, **more: object) -> Path:
    """The time server behind a shell that logs what lwtool sends it (calls.log) and
    its own pid, a line each start (server.pid)."""
    script = (f"echo $$ >> {folder / 'server.pid'}; tee -a {folder / 'calls.log'} | "
              f"{sys.executable} -m mcp_server_time")
    path = folder / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"time": {
        "command": "sh", "args": ["-c", script], **more}}}))
    return path


def _workflow(folder: Path, then_mark: bool = False) -> Path:
    steps: list[dict[str, object]] = [{"id": "now", "uses": "tool.call", "with": {
        "tool": "time.get_current_time", "args": {"timezone": "{{ input.tz }}"}}}]
    tools = ["time.get_current_time"]
    if then_mark:
        steps.append({"id": "mark", "uses": "tool.call", "needs": ["now"], "with": {
            "tool": "mark", "args": {"run": "m", "step": "mark",
                                     "value": "{{ steps.now.output.timezone }}"}}})
        tools.append("mark")
    path = folder / "clock.lwir.json"
    path.write_text(json.dumps({"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
                                "metadata": {"name": "clock"},
                                "permissions": {"tools": tools}, "steps": steps}))
    return path


def _calls(folder: Path) -> int:
    log = folder / "calls.log"
    return log.read_text().count('"tools/call"') if log.exists() else 0


def _last_pid(folder: Path) -> int:
    return int((folder / "server.pid").read_text().split()[-1])


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_tool_call_step_calls_the_servers_tool(tmp_path: Path) -> None:
    servers, flow = _servers(tmp_path), _workflow(tmp_path)
    (tmp_path / "in.json").write_text('{"tz": "UTC"}')
    done = run_cli("run", str(flow), "-i", str(tmp_path / "in.json"), "--tools", str(servers),
                   "--data-dir", str(tmp_path / "d"), "--json")
    assert done.returncode == 0, done.stderr
    output = json.loads(done.stdout)["output"]
    assert output["timezone"] == "UTC" and output["datetime"].endswith("+00:00")
    assert _calls(tmp_path) == 1
    assert _gone(_last_pid(tmp_path))  # ended with lwtool

    (tmp_path / "bad.json").write_text('{"tz": "Nowhere/Bad"}')
    failed = run_cli("run", str(flow), "-i", str(tmp_path / "bad.json"), "--tools",
                     str(servers), "--data-dir", str(tmp_path / "d"))
    assert failed.returncode == 1
    assert ("tool 'time.get_current_time' failed: MCP server 'time': Error executing tool "
            "get_current_time: Invalid timezone") in failed.stderr
    (tmp_path / "num.json").write_text('{"tz": 5}')
    refused = run_cli("run", str(flow), "-i", str(tmp_path / "num.json"), "--tools",
                      str(servers), "--data-dir", str(tmp_path / "d"))
    assert refused.returncode == 1
    assert ("tool 'time.get_current_time' refused the call: the input at /timezone: 5 is "
            "not of type \"string\" (the schema MCP server 'time' lists)") in refused.stderr
    assert _calls(tmp_path) == 2  # the refused input never reached the server


def test_an_ai_agent_step_uses_the_servers_tool(tmp_path: Path) -> None:
    """The model (the loopback OpenAI server) is offered the MCP tool under the name
    providers accept (`time__get_current_time`), calls it, and reads its result."""
    from tests.fixtures.openai_server import fixture_server

    flow = tmp_path / "agent.lwir.json"
    flow.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "clock-agent"},
        "permissions": {"tools": ["time.get_current_time"], "models": ["m"]},
        "steps": [{"id": "ask", "uses": "ai.agent", "with": {
            "model": "m", "tools": ["time.get_current_time"], "prompt": "What time is it?"}}]}))
    (tmp_path / "models.json").write_text('{"m": "openai/gpt-4o-mini"}')
    replies = [{"tool_calls": [{"name": "time__get_current_time",
                                "arguments": '{"timezone": "UTC"}'}]}, "It is now."]
    with fixture_server(replies) as server:
        (tmp_path / "in.json").write_text("{}")
        done = run_cli("run", str(flow), "-i", str(tmp_path / "in.json"), "--tools",
                       str(_servers(tmp_path)), "--models",
                       str(tmp_path / "models.json"), "--data-dir", str(tmp_path / "d"),
                       "--json", env={"OPENAI_API_BASE": server.base_url,
                                      "OPENAI_BASE_URL": server.base_url,
                                      "OPENAI_API_KEY": "sk-fixture"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == "It is now."
    offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert offered == ["time__get_current_time"]
    result = json.loads(next(m["content"] for m in server.requests[1]["messages"]
                             if m["role"] == "tool"))
    assert result["timezone"] == "UTC" and _calls(tmp_path) == 1


def test_a_killed_run_replays_without_calling_the_server_again(tmp_path: Path) -> None:
    servers, flow = _servers(tmp_path), _workflow(tmp_path, then_mark=True)
    (tmp_path / "in.json").write_text('{"tz": "Europe/Paris"}')
    args = ["--tools", str(servers), "--tools", WORKER_TOOLS, "--data-dir", str(tmp_path / "d")]
    run = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(flow), "-i", str(tmp_path / "in.json"),
         "--run-id", "k", "-q", *args], cwd=ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LWTOOL_TEST_DIR": str(tmp_path), "LWTOOL_TEST_BLOCK": "m:mark"})
    deadline = time.monotonic() + 60
    while not (tmp_path / "blocked").exists():  # `now` committed, `mark` in flight
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    assert _gone(_last_pid(tmp_path))  # no orphan
    assert _calls(tmp_path) == 1
    again = run_cli("replay", "k", "--json", *args, env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["output"] == {"value": "Europe/Paris-mark"}
    assert _calls(tmp_path) == 1  # the completed call came from the log


@pytest.mark.parametrize(("entry", "said"), [
    ({"command": "sh", "url": "http://x"}, "give `command` (a server lwtool starts) or `url`"),
    ({"command": "sh", "env": {"K": "${LWTOOL_TEST_UNSET_KEY}"}},
     "mcpServers.time.env.K: the environment variable LWTOOL_TEST_UNSET_KEY is not set"),
    ({"command": "sh", "timeout": 0}, "mcpServers.time.timeout: a number of seconds above 0"),
    ({"command": "sh", "colour": 1}, "unknown key 'colour'"),
    ({"command": "/nonexistent/server"}, "MCP server 'time' could not be started"),
    ({"command": "sleep", "args": ["30"], "timeout": 1},
     "MCP server 'time' did not answer within 1 s (sleep 30)"),
])
def test_a_servers_file_lwtool_cannot_use_is_one_line(tmp_path: Path, entry: dict[str, object],
                                                      said: str) -> None:
    flow = _workflow(tmp_path)
    (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"time": entry}}))
    (tmp_path / "in.json").write_text('{"tz": "UTC"}')
    started = time.monotonic()
    refused = run_cli("run", str(flow), "-i", str(tmp_path / "in.json"), "--tools",
                      str(tmp_path / "servers.json"), "--data-dir", str(tmp_path / "d"))
    assert refused.returncode == 2 and said in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert time.monotonic() - started < 20
    assert not (tmp_path / "d").exists()  # nothing was run or recorded


def test_files_that_are_no_servers_file_and_a_tool_given_twice(tmp_path: Path) -> None:
    flow = _workflow(tmp_path)
    (tmp_path / "in.json").write_text('{"tz": "UTC"}')
    base = ["run", str(flow), "-i", str(tmp_path / "in.json"), "--data-dir",
            str(tmp_path / "d")]
    (tmp_path / "empty.json").write_text('{"servers": {}}')
    empty = run_cli(*base, "--tools", str(tmp_path / "empty.json"))
    assert empty.returncode == 2 and 'expected {"mcpServers"' in empty.stderr
    missing = run_cli(*base, "--tools", str(tmp_path / "nowhere.yaml"))
    assert missing.returncode == 2 and "nowhere.yaml does not exist" in missing.stderr
    (tmp_path / "broken.json").write_text('{"mcpServers": ')
    broken = run_cli(*base, "--tools", str(tmp_path / "broken.json"))
    assert broken.returncode == 2 and f"{tmp_path / 'broken.json'}:1:" in broken.stderr
    twice = run_cli(*base, "--tools", WORKER_TOOLS, "--tools", WORKER_TOOLS)
    assert twice.returncode == 2 and "tool 'mark' is given twice" in twice.stderr


def test_a_worker_serves_runs_with_the_servers_tools(tmp_path: Path, postgres_url: str) -> None:
    """`lwtool worker --tools servers.json`: the server starts once for the worker and
    serves every run it claims (each on a loop of its own)."""
    servers, flow = _servers(tmp_path), _workflow(tmp_path)
    for n, zone in enumerate(("UTC", "Asia/Tokyo", "America/Lima")):
        (tmp_path / f"in{n}.json").write_text(json.dumps({"tz": zone}))
        queued = run_cli("run", str(flow), "-i", str(tmp_path / f"in{n}.json"), "--enqueue",
                         "--run-id", f"c{n}", "--world", postgres_url)
        assert queued.returncode == 0, queued.stderr
    worker = run_cli("worker", "--world", postgres_url, "--tools", str(servers), "--drain",
                     "--data-dir", str(tmp_path / "d"), "-v")
    assert worker.returncode == 0 and len(re.findall(r"run c\d completed", worker.stderr)) == 3, \
        worker.stderr
    assert _calls(tmp_path) == 3  # one server process served the worker's three runs
    assert len((tmp_path / "server.pid").read_text().split()) == 1
    last = run_cli("replay", "c2", "--world", postgres_url, "--json", "--tools", str(servers))
    assert json.loads(last.stdout)["output"]["timezone"] == "America/Lima"
    assert _calls(tmp_path) == 3  # the replay called nothing


def test_an_agent_session_calls_a_server_tool_under_a_name_providers_accept(
        tmp_path: Path) -> None:
    """Providers take tool names of letters, digits, `_` and `-`: the model is given
    `time__get_current_time`, calls it so, and the log names the tool as it is."""
    import asyncio

    from lwtool import local_world
    from lwtool.calls.agent_loop import tool_specs
    from lwtool.calls.scripted import ScriptedModel
    from lwtool.harness.session import run_session
    from lwtool.harness.session_spec import SessionSpec
    from lwtool.mcp.tools import load_servers

    tools = load_servers(str(_servers(tmp_path)))
    names = [spec["function"]["name"] for spec in tool_specs(tools)]
    assert names == ["time__convert_time", "time__get_current_time"]
    world = local_world(tmp_path / "data")
    model = ScriptedModel([{"toolCalls": [{"name": "time__get_current_time",
                                           "arguments": {"timezone": "UTC"}}]}, "done"])
    result = asyncio.run(run_session(world, SessionSpec("agent", model, "What time is it?"),
                                     tools, run_id="a1"))
    assert result.text == "done" and _calls(tmp_path) == 1
    started = world.events("a1", ["harness.tool_call.started"])
    assert [e.payload["toolName"] for e in started] == [
        "time.get_current_time"]
    answered = json.loads(model.calls[-1][-1]["content"])
    assert answered["timezone"] == "UTC"


def test_provider_names_are_safe_and_never_shared() -> None:
    from lwtool import ToolRegistry
    from lwtool.calls.agent_loop import provider_names, tool_named

    tools = ToolRegistry()
    for name in ("plain", "a.b", "a__b", "x y/z", "s." + "t" * 80):
        tools.register(name, lambda args: args)
    named = provider_names(tools)
    assert named["plain"] == "plain" and named["a__b"] == "a__b"
    assert named["a.b"] != "a__b" and named["a.b"].startswith("a__b_")
    assert named["x y/z"] == "x_y_z"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", given) for given in named.values())
    assert len(set(named.values())) == len(named)
    assert all(tool_named(tools, given).name == own  # type: ignore[union-attr]
               for own, given in named.items())
    assert tool_named(tools, "nope") is None


def test_code_run_calls_a_server_tool_through_its_tools_proxy(tmp_path: Path) -> None:
    from tests.coderun.helpers import code_step, workflow

    source = ("export async function run({ input, tools }) {\n"
              "  const now = await tools['time.get_current_time']({ timezone: input.tz });\n"
              "  return { zone: now.timezone, dst: now.is_dst };\n}\n")
    flow = tmp_path / "code.lwir.json"
    flow.write_text(json.dumps(workflow(code_step("c", source),
                                        tools=["time.get_current_time"])))
    (tmp_path / "in.json").write_text('{"tz": "Europe/Oslo"}')
    done = run_cli("run", str(flow), "-i", str(tmp_path / "in.json"), "--tools",
                   str(_servers(tmp_path)), "--data-dir", str(tmp_path / "d"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"]["zone"] == "Europe/Oslo"
    assert _calls(tmp_path) == 1


def test_a_servers_grant_is_what_its_tool_steps_and_agent_steps_are_granted() -> None:
    from lwtool.mcp.tools import server_grants

    lwir = {"steps": [
        {"id": "a", "uses": "tool.call", "with": {"tool": "gh.create_issue"},
         "secrets": ["GITHUB_TOKEN"]},
        {"id": "b", "uses": "ai.agent", "with": {"tools": ["gh.search", "time.now", "local"]},
         "secrets": ["SEARCH_KEY"]},
        {"id": "c", "uses": "ai.agent", "with": {"tools": ["slack.post"]}},
        {"id": "p", "uses": "parallel", "steps": [
            {"id": "d", "uses": "ai.agent", "with": {"tools": ["slack.post"]},
             "secrets": ["SLACK_TOKEN"]}]}]}
    assert server_grants(lwir) == {"gh": {"GITHUB_TOKEN", "SEARCH_KEY"},
                                   "time": {"SEARCH_KEY"}, "slack": {"SLACK_TOKEN"}}

"""Tools from the MCP reference server `@modelcontextprotocol/server-everything` (npm,
tests/clients), over stdio and over streamable HTTP; `lwtool validate --tools` against
its listing; and what a run's manifest records of an MCP tool (its server, the version
the server gives itself, a hash of its schema): a server's new version with the same
schemas is no drift, a changed schema is capability_drift naming both versions."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, run_cli

EVERYTHING = ROOT / "tests" / "clients" / "node_modules" / "@modelcontextprotocol" / \
    "server-everything" / "dist" / "index.js"
SHIFTING = ROOT / "tests" / "mcp" / "shifting_server.py"
WORKER_TOOLS = f"{ROOT / 'tests' / 'world' / 'worker_tools.py'}:tools"
pytestmark = pytest.mark.slow

FLOW = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "everything"},
        "permissions": {"tools": ["everything.get-sum", "everything.get-structured-content",
                                  "mark"]},
        "steps": [
            {"id": "sum", "uses": "tool.call", "with": {
                "tool": "everything.get-sum", "args": {"a": "{{ input.a }}", "b": 3}}},
            {"id": "weather", "uses": "tool.call", "with": {
                "tool": "everything.get-structured-content",
                "args": {"location": "Chicago"}}},
            {"id": "mark", "uses": "tool.call", "needs": ["sum", "weather"], "with": {
                "tool": "mark", "args": {"run": "m", "step": "mark",
                                         "value": "{{ steps.sum.output }}"}}}]}


@pytest.fixture(scope="module")
def http_server() -> Iterator[tuple[str, Path]]:
    """server-everything over streamable HTTP on a free loopback port: its URL and its
    log (a line `Received MCP POST request` a request)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"lwtool-everything-{port}.log"
    with log.open("w") as out:
        server = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], stdout=out,
                                  stderr=subprocess.STDOUT, env={**os.environ,
                                                                 "PORT": str(port)})
    try:
        deadline = time.monotonic() + 30
        while "listening on port" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.unlink(missing_ok=True)


def _posts(log: Path) -> int:
    return log.read_text().count("Received MCP POST request")


def _files(folder: Path, server: dict[str, object]) -> tuple[Path, Path, Path]:
    (folder / "servers.json").write_text(json.dumps({"mcpServers": {"everything": server}}))
    (folder / "flow.lwir.json").write_text(json.dumps(FLOW))
    (folder / "in.json").write_text('{"a": 2}')
    return folder / "servers.json", folder / "flow.lwir.json", folder / "in.json"


def _start_killed(folder: Path, args: list[str], run_id: str) -> None:
    """Run the flow until its `mark` step is in flight (both MCP calls committed), then
    SIGKILL lwtool."""
    run = subprocess.Popen(
        [sys.executable, "-m", "lwtool", "run", str(folder / "flow.lwir.json"), "-i",
         str(folder / "in.json"), "--run-id", run_id, "-q", *args], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "LWTOOL_TEST_DIR": str(folder), "LWTOOL_TEST_BLOCK": "m:mark"})
    deadline = time.monotonic() + 60
    while not (folder / "blocked").exists():
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)


EXPECTED = {"value": "The sum of 2 and 3 is 5.-mark"}


def test_stdio_text_and_structured_results_and_a_replay_after_sigkill(tmp_path: Path) -> None:
    """Over stdio (behind a shell that logs what lwtool sends): a text result is the
    step's output as text, a structuredContent result as data; a run killed after both
    calls replays to the same output without calling the server again."""
    script = f"tee -a {tmp_path / 'calls.log'} | node {EVERYTHING} stdio"
    servers, _, _ = _files(tmp_path, {"command": "sh", "args": ["-c", script]})
    args = ["--tools", str(servers), "--tools", WORKER_TOOLS, "--data-dir",
            str(tmp_path / "d")]
    _start_killed(tmp_path, args, "k")
    calls = (tmp_path / "calls.log").read_text().count('"tools/call"')
    assert calls == 2
    again = run_cli("replay", "k", "--json", *args, env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["output"] == EXPECTED
    assert (tmp_path / "calls.log").read_text().count('"tools/call"') == 2
    events = run_cli("events", "k", "--json", "--data-dir", str(tmp_path / "d")).stdout
    outputs = {e["stepPath"]: e["payload"] for e in map(json.loads, events.splitlines())
               if e["type"] == "StepCompleted"}
    assert set(outputs) == {"sum", "weather", "mark"}
    started = next(json.loads(line) for line in events.splitlines()
                   if json.loads(line)["type"] == "RunStarted")["payload"]
    origin = started["capabilities"]["toolOrigins"]["everything.get-sum"]
    assert origin["mcpServer"] == "everything" and origin["serverName"] and \
        origin["serverVersion"] and origin["schemaHash"].startswith("sha256:")


def test_streamable_http_with_headers_a_sigkill_and_a_replay(
        tmp_path: Path, http_server: tuple[str, Path]) -> None:
    """A `url` server, its header value from the environment: the run is killed after
    both calls; the replay connects and lists (as many requests as `validate --tools`
    makes) and calls nothing."""
    url, log = http_server
    servers, flow, _ = _files(tmp_path, {"url": url,
                                         "headers": {"X-Team": "${LWTOOL_TEST_TEAM}"}})
    env = {"LWTOOL_TEST_DIR": str(tmp_path), "LWTOOL_TEST_TEAM": "qa"}
    os.environ["LWTOOL_TEST_TEAM"] = "qa"
    try:
        args = ["--tools", str(servers), "--tools", WORKER_TOOLS, "--data-dir",
                str(tmp_path / "d")]
        _start_killed(tmp_path, args, "h")
        before = _posts(log)
        checked = run_cli("validate", str(flow), "--tools", str(servers), "--tools",
                          WORKER_TOOLS, env=env)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        connecting = _posts(log) - before
        again = run_cli("replay", "h", "--json", *args, env=env)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["output"] == EXPECTED
        assert _posts(log) - before == 2 * connecting  # no tools/call among them
    finally:
        os.environ.pop("LWTOOL_TEST_TEAM", None)
    unset = run_cli("replay", "h", *args, env={"LWTOOL_TEST_DIR": str(tmp_path)})
    assert unset.returncode == 2
    assert "headers.X-Team: the environment variable LWTOOL_TEST_TEAM is not set" in \
        unset.stderr


def test_an_http_server_outside_permissions_network_is_refused(
        tmp_path: Path, http_server: tuple[str, Path]) -> None:
    """A workflow that lists hosts may reach an HTTP MCP server only on that list (its
    loopback address listed as an address); refused: capability_denied naming the host
    before the call."""
    url, _ = http_server
    port = url.split(":")[2].split("/")[0]
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"everything": {"url": url}}}))
    (tmp_path / "in.json").write_text('{"a": 2}')

    def run(network: list[str], run_id: str) -> Any:
        flow = {**FLOW, "permissions": {"tools": ["everything.get-sum"], "network": network},
                "steps": [FLOW["steps"][0]]}
        (tmp_path / f"{run_id}.lwir.json").write_text(json.dumps(flow))
        return run_cli("run", str(tmp_path / f"{run_id}.lwir.json"), "-i",
                       str(tmp_path / "in.json"), "--tools", str(servers), "--data-dir",
                       str(tmp_path / "d"), "--run-id", run_id, "--json")

    refused = run(["api.example.com:443"], "off")
    assert refused.returncode == 1, refused.stderr
    failure = json.loads(refused.stdout)
    assert failure["causeCode"] == "capability_denied"
    assert f"127.0.0.1:{port} is not in permissions.network" in failure["message"]
    events = run_cli("events", "off", "--json", "--type", "StepAttemptFailed",
                     "--data-dir", str(tmp_path / "d")).stdout
    assert json.loads(events)["payload"]["deniedHosts"] == [f"127.0.0.1:{port}"]
    allowed = run([f"127.0.0.1:{port}"], "on")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["output"] == "The sum of 2 and 3 is 5."


def test_validate_tools_names_a_tool_its_server_does_not_list(tmp_path: Path) -> None:
    script = f"node {EVERYTHING} stdio"
    servers, flow, _ = _files(tmp_path, {"command": "sh", "args": ["-c", script]})
    wrong = {**FLOW, "permissions": {"tools": ["everything.get-sums",
                                               "everything.get-structured-content", "mark"]}}
    wrong["steps"] = [FLOW["steps"][1]]  # type: ignore[index]
    flow.write_text(json.dumps(wrong, indent=2))
    found = run_cli("validate", str(flow), "--tools", str(servers), "--format", "json")
    assert found.returncode == 1, found.stderr
    findings = json.loads(found.stdout)["files"][0]["findings"]
    lines = flow.read_text().splitlines()
    line_of = {name: 1 + next(n for n, text in enumerate(lines) if f'"{name}"' in text)
               for name in ("everything.get-sums", "mark")}
    assert [(f["code"], f["pointer"], f["line"]) for f in findings] == [
        ("tools.unavailable", "/permissions/tools/0", line_of["everything.get-sums"]),
        ("tools.unavailable", "/permissions/tools/2", line_of["mark"])]
    assert "MCP server 'everything' lists echo, " in findings[0]["message"]
    assert "did you mean 'everything.get-sum'?" in findings[0]["message"]
    assert "not provided by the tools given" in findings[1]["message"]
    assert found.stderr == ""  # the server's own stderr is not lwtool's
    explained = run_cli("explain", "tools.unavailable")
    assert explained.returncode == 0 and "validate --tools" in explained.stdout


def test_a_server_that_dies_at_start_shows_its_last_stderr_lines(tmp_path: Path) -> None:
    servers, flow, _ = _files(tmp_path, {"command": "sh", "args": [
        "-c", "echo 'loading config' >&2; echo 'fatal: no API key' >&2; exit 3"]})
    refused = run_cli("validate", str(flow), "--tools", str(servers))
    assert refused.returncode == 2
    assert "MCP server 'everything' could not be started" in refused.stderr
    assert "its stderr ends: loading config | fatal: no API key" in refused.stderr


def _shifting(folder: Path, **env: str) -> Path:
    path = folder / "shifting.json"
    path.write_text(json.dumps({"mcpServers": {"s": {
        "command": sys.executable, "args": [str(SHIFTING)], "env": env}}}))
    return path


ASKING = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: shifting}
permissions: {tools: [s.double]}
steps:
  - {id: d, uses: tool.call, with: {tool: s.double, args: {n: 21}}}
  - {id: ask, uses: human.input, needs: [d], with: {prompt: "go on?", schema: {type: string}}}
  - {id: e, uses: tool.call, needs: [ask, d], with: {tool: s.double,
     args: {n: "{{ steps.d.output.n }}"}}}
"""


def test_a_new_server_version_is_recorded_and_a_changed_schema_is_drift(
        tmp_path: Path) -> None:
    (tmp_path / "flow.lwir.yaml").write_text(ASKING)
    (tmp_path / "in.json").write_text("{}")
    (tmp_path / "yes.json").write_text('"yes"')
    data = ["--data-dir", str(tmp_path / "d")]
    waits = run_cli("run", str(tmp_path / "flow.lwir.yaml"), "-i", str(tmp_path / "in.json"),
                    "--run-id", "w", "--tools", str(_shifting(tmp_path)), *data)
    assert waits.returncode == 3, waits.stderr
    changed = run_cli("respond", "w", "ask", "-i", str(tmp_path / "yes.json"), "--resume",
                      "--tools", str(_shifting(tmp_path, SHIFT_SCHEMA="2",
                                               SHIFT_VERSION="1.1")), *data)
    assert changed.returncode == 1
    assert ("capability_drift): the code, description or schemas of tools the run used "
            "changed since it started: s.double (MCP server 's': shifting 1.0 -> 1.1)"
            ) in changed.stderr
    upgraded = run_cli("replay", "w", "--json", "--tools",
                       str(_shifting(tmp_path, SHIFT_VERSION="1.1")), *data)
    assert upgraded.returncode == 0, upgraded.stderr
    assert json.loads(upgraded.stdout)["output"] == {"n": 84}

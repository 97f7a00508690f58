"""MCP servers that fail as real ones do (tests/mcp/raw_server.py): a call slower than
the server's `timeout` and a server that dies mid-call are transient failures the
step's retry policy takes (the dead server started anew for the next attempt, and for
later runs of the process); a server listing a tool twice, writing noise on stdout or
returning structured content its outputSchema refuses is one plain line, no traceback;
and a servers file with a server that never answers fails only the runs that need it
(a run starts the servers its tools name, no other)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli

RAW = Path(__file__).with_name("raw_server.py")
pytestmark = pytest.mark.slow


def _servers(folder: Path, mode: str = "", timeout: float = 5, **more: Any) -> Path:
    path = folder / "servers.json"
    path.write_text(json.dumps({"mcpServers": {"raw": {
        "command": sys.executable, "args": [str(RAW)], "timeout": timeout,
        "env": {"RAW_MODE": mode, "RAW_MARK": str(folder / "died")}}, **more}}))
    return path


def _flow(folder: Path, tool: str, args: dict[str, Any], attempts: int = 3) -> Path:
    path = folder / "flow.lwir.json"
    path.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "raw"}, "permissions": {"tools": [f"raw.{tool}"]},
        "steps": [{"id": "call", "uses": "tool.call",
                   "retry": {"maxAttempts": attempts, "backoffMs": 1},
                   "with": {"tool": f"raw.{tool}", "args": args}}]}))
    return path


def _run(folder: Path, flow: Path, servers: Path, run_id: str = "r") -> Any:
    (folder / "in.json").write_text("{}")
    return run_cli("run", str(flow), "-i", str(folder / "in.json"), "--tools", str(servers),
                   "--data-dir", str(folder / "d"), "--run-id", run_id, "--json")


def _failures(folder: Path, run_id: str = "r") -> list[dict[str, Any]]:
    events = run_cli("events", run_id, "--json", "--type", "StepAttemptFailed",
                     "--data-dir", str(folder / "d"))
    return [json.loads(line)["payload"] for line in events.stdout.splitlines()]


def test_a_call_slower_than_the_timeout_is_retried_by_the_steps_policy(
        tmp_path: Path) -> None:
    done = _run(tmp_path, _flow(tmp_path, "slow", {"seconds": 3}),
                _servers(tmp_path, timeout=1))
    assert done.returncode == 1, done.stderr
    failed = _failures(tmp_path)
    assert len(failed) == 3 and all(f["transient"] for f in failed), failed
    assert "did not answer" in failed[0]["error"]


def test_a_stdio_server_sees_only_the_secrets_its_steps_are_granted(tmp_path: Path) -> None:
    """The server's environment: the SDK's safe defaults, its entry's `env`, and the
    secrets granted to the tool.call steps that call its tools; not lwtool's other
    variables (a credential the run never granted is not there to read)."""
    flow = json.loads(_flow(tmp_path, "env", {"names": [
        "GRANTED_TOKEN", "OTHER_TOKEN", "LWTOOL_TEST_PLAIN", "RAW_MODE"]}).read_text())
    flow["permissions"]["secrets"] = ["GRANTED_TOKEN"]
    flow["steps"][0]["secrets"] = ["GRANTED_TOKEN"]
    (tmp_path / "flow.lwir.json").write_text(json.dumps(flow))
    (tmp_path / "in.json").write_text("{}")
    done = run_cli("run", str(tmp_path / "flow.lwir.json"), "-i", str(tmp_path / "in.json"),
                   "--tools", str(_servers(tmp_path, mode="quiet")), "--data-dir",
                   str(tmp_path / "d"), "--json", env={
                       "GRANTED_TOKEN": "granted-value-123", "OTHER_TOKEN": "other-value-456",
                       "LWTOOL_TEST_PLAIN": "plain"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {
        "GRANTED_TOKEN": "[secret:GRANTED_TOKEN]",  # it was there; masked in the output
        "OTHER_TOKEN": None, "LWTOOL_TEST_PLAIN": None, "RAW_MODE": "quiet"}


def test_a_server_that_dies_mid_call_is_started_anew_for_the_retry(tmp_path: Path) -> None:
    done = _run(tmp_path, _flow(tmp_path, "die_once", {"n": 1}), _servers(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"n": 1}
    failed = _failures(tmp_path)
    assert len(failed) == 1 and failed[0]["transient"], failed
    assert (tmp_path / "died").exists()


def test_a_server_listing_a_tool_twice_is_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, _flow(tmp_path, "echo", {}), _servers(tmp_path, "twice"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "lwtool: MCP server 'raw' lists the tool 'echo' twice: its tools are ambiguous"]


def test_noise_on_a_servers_stdout_is_one_warning(tmp_path: Path) -> None:
    done = _run(tmp_path, _flow(tmp_path, "echo", {"k": "v"}), _servers(tmp_path, "noise"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == {"k": "v"}
    assert "Traceback" not in done.stderr
    warned = [line for line in done.stderr.splitlines() if "not JSON-RPC" in line]
    assert len(warned) == 1, done.stderr


def test_structured_content_its_schema_refuses_fails_in_plain_words(tmp_path: Path) -> None:
    done = _run(tmp_path, _flow(tmp_path, "unfit", {}, attempts=1), _servers(tmp_path))
    assert done.returncode == 1
    message = _failures(tmp_path)[0]["error"]
    assert message == ("tool 'raw.unfit' failed: MCP server 'raw': tool 'unfit' returned "
                       "structured content that does not fit its outputSchema: 'high' is "
                       "not of type 'integer' (at /score)"), message
    assert "Error" not in message and "site-packages" not in message


def test_a_server_that_never_answers_fails_only_the_runs_that_need_it(
        tmp_path: Path) -> None:
    away = {"away": {"command": "sleep", "args": ["60"], "timeout": 30}}
    servers = _servers(tmp_path, **away)
    started = time.monotonic()
    done = _run(tmp_path, _flow(tmp_path, "echo", {"k": 1}), servers)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 20  # `away` was never started or waited for
    flow = tmp_path / "away.lwir.json"
    flow.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "away"}, "permissions": {"tools": ["away.t"]},
        "steps": [{"id": "call", "uses": "tool.call", "with": {"tool": "away.t"}}]}))
    servers.write_text(json.dumps({"mcpServers": {
        **json.loads(servers.read_text())["mcpServers"],
        "away": {"command": "sleep", "args": ["60"], "timeout": 1}}}))
    refused = _run(tmp_path, flow, servers, "r2")
    assert refused.returncode == 2
    assert "MCP server 'away' did not answer within 1 s" in refused.stderr


def test_where_the_runs_are_not_known_a_server_that_fails_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A worker (or `run --enqueue`, `orchestrate`) starts every server: one that cannot
    be started is a warning, and only a run that calls its tools is refused, with why."""
    from lwtool.cli.runtime_options import load_tool_registry
    from lwtool.tools import MissingTools, check_tools

    servers = _servers(tmp_path, bad={"command": str(tmp_path / "no-such-server")})
    registry = load_tool_registry([str(servers)])
    warned = capsys.readouterr().err.splitlines()
    assert warned == [f"lwtool: warning: MCP server 'bad' could not be started "
                      f"({tmp_path / 'no-such-server'}): [Errno 2] No such file or "
                      f"directory: '{tmp_path / 'no-such-server'}'; only the runs that "
                      "call its tools fail"], warned
    check_tools(["raw.echo"], registry)
    with pytest.raises(MissingTools, match="MCP server 'bad' could not be started"):
        check_tools(["raw.echo", "bad.t"], registry)

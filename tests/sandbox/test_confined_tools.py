"""`--confine-tools`: a Python tool (a process per call) and a stdio MCP server run in
bubblewrap with no network but the egress proxy, which lets through only the workflow's
permissions.network. Through real `lwtool` processes, a real loopback HTTP server, and
the hand-written MCP server: the listed address is reached; a name that is not listed
(`localhost`, even though it resolves to the listed address) fails the step with
capability_denied and `deniedHosts`; a raw socket reaches nothing; the step's granted
secret still reaches the confined tool."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lwtool.sandbox.bwrap import bwrap_problem
from tests.conftest import run_cli

RAW = Path(__file__).resolve().parents[1] / "mcp" / "raw_server.py"
TOOLS = """\
import socket
import urllib.request

def fetch(args, ctx):
    with urllib.request.urlopen(args["url"], timeout=5) as answer:
        return {"status": answer.status, "token": len(ctx.secret("API_TOKEN"))}

def raw(args):
    try:
        socket.create_connection(("127.0.0.1", args["port"]), timeout=2).close()
        return "reached"
    except OSError as exc:
        return type(exc).__name__

tools = {"fetch": fetch, "raw": raw}
"""


@pytest.fixture(scope="module")
def web() -> Iterator[int]:
    assert bwrap_problem() is None, bwrap_problem()  # .ci/run installs bubblewrap
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _flow(folder: Path, web: int, tool: str, url: str, **more: Any) -> Path:
    path = folder / "flow.lwir.json"
    path.write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "confined"},
        "permissions": {"tools": [tool], "secrets": ["API_TOKEN"],
                        "network": [f"127.0.0.1:{web}"]},
        "steps": [{"id": "get", "uses": "tool.call", "secrets": ["API_TOKEN"],
                   "with": {"tool": tool, "args": {"url": url, **more}}}]}))
    return path


def _run(folder: Path, flow: Path, tools: str, run_id: str) -> Any:
    (folder / "in.json").write_text("{}")
    return run_cli("run", str(flow), "-i", "in.json", "--tools", tools, "--data-dir", "d",
                   "--run-id", run_id, "--json", "--confine-tools", cwd=folder,
                   env={"API_TOKEN": "token-value-1234"})


def _denied(folder: Path, run_id: str) -> list[str]:
    out = run_cli("events", run_id, "--json", "--type", "StepAttemptFailed",
                  "--data-dir", "d", cwd=folder).stdout
    return json.loads(out.splitlines()[-1])["payload"].get("deniedHosts", [])


def test_a_confined_python_tool_reaches_the_listed_hosts_only(tmp_path: Path,
                                                               web: int) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    allowed = _run(tmp_path, _flow(tmp_path, web, "fetch", f"http://127.0.0.1:{web}/"),
                   "tools.py:tools", "ok")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["output"] == {"status": 200, "token": 16}
    refused = _run(tmp_path, _flow(tmp_path, web, "fetch", f"http://localhost:{web}/"),
                   "tools.py:tools", "off")
    assert refused.returncode == 1, refused.stderr
    assert json.loads(refused.stdout)["causeCode"] == "capability_denied"
    assert _denied(tmp_path, "off") == [f"localhost:{web}"]
    raw = _run(tmp_path, _flow(tmp_path, web, "raw", "", port=web), "tools.py:tools", "raw")
    assert json.loads(raw.stdout)["output"] == "ConnectionRefusedError"  # its own loopback


def test_a_confined_stdio_server_reaches_the_listed_hosts_only(tmp_path: Path,
                                                                web: int) -> None:
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"raw": {
        "command": sys.executable, "args": [str(RAW)]}}}))
    allowed = _run(tmp_path, _flow(tmp_path, web, "raw.fetch", f"http://127.0.0.1:{web}/"),
                   str(servers), "ok")
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["output"] == {"status": 200}
    refused = _run(tmp_path, _flow(tmp_path, web, "raw.fetch", "http://example.com/"),
                   str(servers), "off")
    assert json.loads(refused.stdout)["causeCode"] == "capability_denied", refused.stdout
    assert _denied(tmp_path, "off") == ["example.com:80"]

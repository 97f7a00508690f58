"""`lwtool lsp` exits as LSP says: 0 after shutdown then exit, 1 for exit alone."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


INIT = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}}]


@pytest.mark.parametrize(("messages", "code"), [
    ([*INIT, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
      {"jsonrpc": "2.0", "method": "exit"}], 0),
    ([*INIT, {"jsonrpc": "2.0", "method": "exit"}], 1),
])
def test_exit_code(messages: list[dict[str, object]], code: int) -> None:
    result = subprocess.run([sys.executable, "-m", "lwtool", "lsp"], cwd=ROOT,
                            input=b"".join(_frame(m) for m in messages),
                            capture_output=True, timeout=60)
    assert result.returncode == code, result.stderr.decode()[-500:]


def test_a_request_after_shutdown_is_invalid_request() -> None:
    messages = [*INIT, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
                {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {
                    "textDocument": {"uri": "file:///x.lwir.yaml"},
                    "position": {"line": 0, "character": 0}}},
                {"jsonrpc": "2.0", "method": "exit"}]
    result = subprocess.run([sys.executable, "-m", "lwtool", "lsp"], cwd=ROOT,
                            input=b"".join(_frame(m) for m in messages),
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()[-500:]
    replies = [json.loads(part.split(b"\r\n\r\n", 1)[1])
               for part in result.stdout.split(b"Content-Length: ")[1:]]
    answer = next(r for r in replies if r.get("id") == 3)
    assert answer["error"]["code"] == -32600 and "shut down" in answer["error"]["message"]
    assert "result" not in answer


@pytest.mark.parametrize("flags", [["--stdio"], ["--stdio", "--clientProcessId=4242"],
                                   ["--clientProcessId", "4242", "--stdio"]])
def test_the_transport_flags_clients_add_are_taken(flags: list[str]) -> None:
    """vscode-languageclient's TransportKind.stdio starts `lwtool lsp --stdio` (and adds
    `--clientProcessId`): the server must serve, not refuse the flag."""
    messages = [*INIT, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
                {"jsonrpc": "2.0", "method": "exit"}]
    result = subprocess.run([sys.executable, "-m", "lwtool", "lsp", *flags], cwd=ROOT,
                            input=b"".join(_frame(m) for m in messages),
                            capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()[-500:]
    assert b'"capabilities"' in result.stdout


@pytest.mark.parametrize(("flag", "said"), [
    ("--socket=5007", "lwtool: lwtool lsp speaks LSP on stdio only, not --socket"),
    ("--pipe=/tmp/x", "lwtool: lwtool lsp speaks LSP on stdio only, not --pipe"),
    ("--node-ipc", "lwtool: lwtool lsp speaks LSP on stdio only, not --node-ipc"),
    ("--verbose", "lwtool: lwtool lsp takes no option '--verbose'"),
])
def test_other_transports_are_refused_in_one_line(flag: str, said: str) -> None:
    result = subprocess.run([sys.executable, "-m", "lwtool", "lsp", flag], cwd=ROOT,
                            input=b"", capture_output=True, timeout=60)
    assert result.returncode == 2 and result.stdout == b""
    assert result.stderr.decode().startswith(said) and result.stderr.count(b"\n") == 1

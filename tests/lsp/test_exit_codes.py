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

"""`lwtool lsp` against a broken or hostile client, over real stdio: bad frames get a
JSON-RPC error and the server keeps listening, requests with params that do not fit get
an error reply with their id, and requests about unopened special files (`/dev/zero`,
a FIFO) answer at once instead of eating memory or hanging."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

REPLY_TIMEOUT = 20


def frame(message: Any) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: int, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}


class RawClient:
    """Bytes in, parsed messages out; nothing between us and the server's framing."""

    def __init__(self, handshake: bool = True) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "lwtool", "lsp"], cwd=ROOT,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if not handshake:
            return
        self.send(frame(request(0, "initialize", {"capabilities": {}})))
        assert "capabilities" in self.reply(0)["result"]
        self.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                return
            self.messages.put(json.loads(out.read(length)))

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def next_message(self) -> dict[str, Any]:
        return self.messages.get(timeout=REPLY_TIMEOUT)

    def reply(self, msg_id: Any) -> dict[str, Any]:
        """The reply to `msg_id` (None: a refusal that names no request), skipping
        notifications such as diagnostics and window/showMessage."""
        while True:
            message = self.next_message()
            if "method" not in message and message.get("id") == msg_id:
                return message

    def close(self) -> int:
        self.send(frame(request(999, "shutdown", None)))
        assert self.reply(999)["result"] is None
        self.send(frame({"jsonrpc": "2.0", "method": "exit"}))
        return self.process.wait(timeout=REPLY_TIMEOUT)


@pytest.fixture
def client():  # type: ignore[no-untyped-def]
    raw = RawClient()
    yield raw
    if raw.process.poll() is None:
        raw.process.kill()
        raw.process.wait()


def symbols(msg_id: int, uri: str) -> bytes:
    return frame(request(msg_id, "textDocument/documentSymbol", {"textDocument": {"uri": uri}}))


EXAMPLE = (ROOT / "examples" / "refine-loop.lwir.yaml").as_uri()


def _parse_error(client: RawClient) -> str:
    refusal = client.reply(None)
    assert refusal["error"]["code"] == -32700, refusal
    return str(refusal["error"]["message"])


@pytest.mark.parametrize("header", [b"Content-Length: abc\r\n\r\n",
                                    b"Content-Lenght: 12\r\n\r\n",
                                    b"Content-Length: 99999999999\r\n\r\n",
                                    b"garbage without a blank line\r\n"])
def test_a_bad_header_is_refused_and_the_next_frame_is_served(client: RawClient,
                                                              header: bytes) -> None:
    client.send(header + b'{"jsonrpc": "2.0", "id": 5, "method": "shutdown"}')
    client.send(symbols(1, EXAMPLE))
    assert "bad frame" in _parse_error(client)
    assert [s["name"] for s in client.reply(1)["result"]][:2] == ["improve", "check"]
    assert client.close() == 0


@pytest.mark.parametrize("delta", [-9, +40])
def test_a_wrong_content_length_costs_one_message_not_the_stream(client: RawClient,
                                                                  delta: int) -> None:
    body = json.dumps(request(2, "textDocument/documentSymbol",
                              {"textDocument": {"uri": EXAMPLE}})).encode()
    client.send(b"Content-Length: %d\r\n\r\n" % (len(body) + delta) + body)
    client.send(symbols(3, EXAMPLE))
    assert "parse error" in _parse_error(client)
    assert client.reply(3)["result"][0]["name"] == "improve"
    assert client.close() == 0


@pytest.mark.parametrize("body", [b"[1, 2]", b"42", b'{"jsonrpc": "1.0", "id": 4}', b"{"])
def test_json_that_is_no_message_is_refused(client: RawClient, body: bytes) -> None:
    client.send(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    refusal = client.next_message()
    assert refusal["error"]["code"] in (-32700, -32600), refusal
    client.send(symbols(6, EXAMPLE))
    assert client.reply(6)["result"][0]["name"] == "improve"
    assert client.close() == 0


@pytest.mark.parametrize("params", [
    {"textDocument": {"uri": EXAMPLE}, "position": "line 3"},
    {"textDocument": {}, "position": {"line": 0, "character": 0}},
    None,
])
def test_a_request_with_params_that_do_not_fit_gets_an_error_reply(client: RawClient,
                                                                   params: Any) -> None:
    client.send(frame(request(7, "textDocument/hover", params)))
    reply = client.reply(7)
    assert reply["error"]["code"] == -32602, reply
    assert "textDocument/hover" in reply["error"]["message"]
    assert client.close() == 0


def test_unopened_special_files_answer_at_once(client: RawClient, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.lwir.yaml"
    os.mkfifo(fifo)
    link = tmp_path / "zero.lwir.yaml"
    link.symlink_to("/dev/zero")
    for n, uri in enumerate(["file:///dev/zero", fifo.as_uri(), link.as_uri(),
                             (tmp_path / "missing.yaml").as_uri()]):
        client.send(symbols(10 + n, uri))
        assert client.reply(10 + n)["result"] == [], uri
        client.send(frame(request(20 + n, "textDocument/hover", {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}})))
        assert client.reply(20 + n)["result"] is None
    assert client.close() == 0


def test_an_unopened_regular_file_is_read_from_disk(client: RawClient) -> None:
    client.send(symbols(30, EXAMPLE))
    assert [s["name"] for s in client.reply(30)["result"]][:2] == ["improve", "check"]
    assert client.close() == 0

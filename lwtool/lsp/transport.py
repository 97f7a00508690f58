"""The language server's stdio transport: LSP base-protocol framing that a broken client
cannot derail.

pygls's own reader trusts every frame: a Content-Length it cannot parse, or one that is
too short or too long, puts it out of step with the stream for good (the server goes
deaf), a huge one is read into memory whole, and a request whose params do not fit the
method's type is dropped without a reply. This reader answers each of those with a
JSON-RPC error and finds the next frame by its `Content-Length:` header (a body over
MAX_BODY is skipped that way too, never buffered whole). Messages that parse are
handed to pygls. Nothing here imports pygls before `serve` runs: the early phase
(lsp/early.py) reads with the same FrameReader.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

logger = logging.getLogger(__name__)

MAX_HEADER = 8 * 1024  # bytes of header block before we call it garbage
MAX_BODY = 64 * 1024 * 1024  # a didOpen of an 8 MiB file, escaped, fits well within
_HEADER_START = re.compile(rb"content-length\s*:", re.IGNORECASE)
_LENGTH = re.compile(rb"content-length\s*:\s*(\d{1,12})\s*", re.IGNORECASE)
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


class FrameReader:
    """Frames from a byte stream, resynchronizing after a malformed one. `fill()` awaits
    the next chunk of bytes (b"" at end of stream); `on_error(message)` is told about
    each frame that was refused."""

    def __init__(self, fill: Callable[[], Any], on_error: Callable[[str], None]) -> None:
        self._fill = fill
        self.on_error = on_error
        self._buffer = bytearray()
        self._eof = False

    async def _more(self) -> bool:
        if self._eof:
            return False
        chunk = await self._fill()
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    def resync(self, skip: int = 1) -> None:
        """Drop bytes up to the next `Content-Length:` at or after `skip` (all of them,
        but a possible partial header, when there is none yet)."""
        found = _HEADER_START.search(self._buffer, skip)
        if found:
            del self._buffer[:found.start()]
        else:
            del self._buffer[:max(0, len(self._buffer) - 32)]

    def push_back(self, data: bytes) -> None:
        self._buffer[:0] = data

    async def next(self) -> bytes | None:
        """The next frame's body, or None at the end of the stream."""
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEADER:
                    self.on_error("header block too long or missing its blank line")
                    self.resync()
                    continue
                if not await self._more():
                    return None
                continue
            header = bytes(self._buffer[:end])
            length = _content_length(header)
            if length is None:
                self.on_error("a header block without a valid Content-Length")
                self.resync(end + 4 if _HEADER_START.search(header) is None else 1)
                continue
            if length > MAX_BODY:  # never buffered: skipped like any bad frame
                self.on_error(f"a body of {length:,} bytes (the limit is {MAX_BODY:,})")
                self.resync(end + 4)
                continue
            del self._buffer[:end + 4]
            while len(self._buffer) < length:
                if not await self._more():
                    return None
            body = bytes(self._buffer[:length])
            del self._buffer[:length]
            return body


def _content_length(header: bytes) -> int | None:
    """The Content-Length of a header block whose every line is a `Name: value` header."""
    length = None
    for line in header.split(b"\r\n"):
        if b":" not in line:
            return None
        match = _LENGTH.fullmatch(line)
        if match:
            length = int(match.group(1))
    return length


def error_message(message: str, msg_id: Any = None, code: int = PARSE_ERROR
                  ) -> dict[str, Any]:
    """A JSON-RPC error response refusing a message."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


def stdin_chunks(stdin: BinaryIO) -> Callable[[], Any]:
    """An awaitable reader of stdin chunks, fed by a daemon thread (a blocked read must
    not keep the process alive once the server has exited)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes] = asyncio.Queue(maxsize=16)
    fd = stdin.fileno()

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
            if not chunk:
                return

    threading.Thread(target=pump, name="lsp-stdin", daemon=True).start()
    return queue.get


async def serve(server: Any, reader: FrameReader, replay: list[bytes],
                next_frame: asyncio.Future[bytes | None] | None = None) -> None:
    """Hand `server.protocol` the bodies in `replay`, then `next_frame`'s, then each frame
    `reader` reads, until `exit`, the end of the stream, or the server's stop event."""
    from pygls.exceptions import JsonRpcException

    protocol = server.protocol

    def refuse(message: str, msg_id: Any = None, code: int = PARSE_ERROR) -> None:
        logger.warning("refused a message: %s", message)
        protocol._send_data(error_message(message, msg_id, code))

    reader.on_error = lambda m: refuse(f"bad frame: {m}")
    pending = list(replay)

    async def next_body() -> bytes | None:
        nonlocal next_frame
        if pending:
            return pending.pop(0)
        if next_frame is not None:
            frame, next_frame = next_frame, None
            return await frame
        return await reader.next()

    while not server._stop_event.is_set():
        body = await next_body()
        if body is None:
            return
        try:
            data = json.loads(body)
        except ValueError as exc:
            refuse(f"parse error: {exc}")
            inside = _HEADER_START.search(body)
            if inside:  # the frame's length was too long: the next frame starts in it
                reader.push_back(body[inside.start():])
            else:  # too short, perhaps: skip the rest of this body
                reader.resync(0)
            continue
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or (
                "method" not in data and "id" not in data):
            msg_id = data.get("id") if isinstance(data, dict) else None
            refuse("invalid request: not a JSON-RPC 2.0 message object",
                   msg_id if isinstance(msg_id, (int, str)) else None, INVALID_REQUEST)
            continue
        try:
            message = protocol.structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method")
            if "id" in data and method is not None:  # a request gets its error reply
                error = exc.to_response_error()
                refuse(f"{error.message}: the params do not fit {method}", data["id"],
                       error.code)
            else:
                logger.warning("dropped a %s notification: its params do not fit", method)
            continue
        try:
            protocol.handle_message(message)
        except SystemExit:  # pygls's `exit` handler
            return
        except Exception:  # noqa: BLE001 - one bad message never stops the server
            logger.exception("unable to handle a message")

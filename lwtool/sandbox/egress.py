"""The filtering proxy of confined tools: an HTTP proxy on a unix socket that lets a
connection through only to the hosts of `permissions.network` (lwtool.capability.hosts:
a name must resolve to public addresses or to addresses listed themselves).

It takes `CONNECT host:port` (HTTPS and any TCP tunnel) and absolute-form requests
(`GET http://host/...`, plain HTTP, passed on in origin form). The address it checked
is the one it connects to, so a name that resolves elsewhere between check and connect
(DNS rebinding) gains nothing. A refused target gets `403` and is remembered
(`denied`): the step that made it fails with `capability_denied`. It runs on a loop of
its own, in a thread, so the tools' threads and the MCP hub's loop reach it alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from urllib.parse import urlsplit

from lwtool.capability.hosts import HostPattern, non_global, refusal

HEAD_LIMIT = 64 * 1024


class EgressProxy:
    """One proxy: start() it, hand `socket_path` to the sandbox, close() it."""

    def __init__(self, patterns: list[HostPattern]) -> None:
        self.patterns = patterns
        self.denied: list[str] = []
        self._folder = tempfile.mkdtemp(prefix="lwtool-egress-")
        self.socket_path = str(Path(self._folder) / "egress.sock")
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._serve, name="lwtool-egress", daemon=True)

    def start(self) -> EgressProxy:
        self._thread.start()
        self._ready.wait(10)
        os.chmod(self._folder, 0o777)  # the sandbox's user connects and writes there
        os.chmod(self.socket_path, 0o777)
        return self

    def close(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        shutil.rmtree(self._folder, ignore_errors=True)  # the socket and the tool's TMPDIR

    def denied_since(self, mark: int) -> list[str]:
        return self.denied[mark:]

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_unix_server(self._client, path=self.socket_path))
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            self._loop.close()

    async def _client(self, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            writer.close()
            return
        target = _target(head)
        if target is None:
            await _answer(writer, b"400 Bad Request")
            return
        host, port, tunnel = target
        address = await self._checked(host, port)
        if address is None:
            await _answer(writer, b"403 Forbidden")
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(address, port)
        except OSError:
            await _answer(writer, b"502 Bad Gateway")
            return
        if tunnel:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        else:
            up_writer.write(_origin_form(head))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer),
                             return_exceptions=True)

    async def _checked(self, host: str, port: int) -> str | None:
        """The address to connect to, or None (refused, remembered in `denied`)."""
        where = f"{host}:{port}"
        why = refusal(self.patterns, host, port, resolve=False)
        if why is None:
            addresses = await _addresses(host, port)
            listed = {p.address for p in self.patterns if p.address is not None}
            allowed = [a for a in addresses if not non_global(a) or a in listed]
            if allowed and len(allowed) == len(addresses):
                return str(allowed[0])
        self.denied.append(where)
        return None


def _target(head: bytes) -> tuple[str, int, bool] | None:
    """(host, port, tunnel) of a proxy request's first line."""
    try:
        method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    except ValueError:
        return None
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        return (host, int(port), True) if host and port.isdigit() else None
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        return None
    return parts.hostname, parts.port or 80, False


def _origin_form(head: bytes) -> bytes:
    """An absolute-form request (`GET http://host/path HTTP/1.1`) as a server expects
    it from a client (`GET /path HTTP/1.1`); its Host header is the client's."""
    first, _, rest = head.partition(b"\r\n")
    method, target, version = first.split(b" ", 2)
    parts = urlsplit(target.decode("latin-1"))
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return b" ".join((method, path.encode("latin-1"), version)) + b"\r\n" + rest


async def _addresses(host: str, port: int
                     ) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port,
                                                             type=socket.SOCK_STREAM)
    except OSError:
        return []
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]


async def _answer(writer: asyncio.StreamWriter, status: bytes) -> None:
    writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    with contextlib.suppress(OSError):
        await writer.drain()
    writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.close()

"""The MCP servers of one process, each connected once (`mcp.Client`: a stdio server
started as a child process, or a streamable HTTP one) on an event loop and thread of
their own, so that any run's loop (a worker runs each run on its own) can call their
tools: a call is handed to the hub's loop and its result awaited where it was made.

Servers start when the tools file is loaded (their tools are listed: names, schemas),
each within its `timeout`; one that does not answer in time is one error naming it.
They stop when the process ends (atexit; the SDK ends a stdio server's process tree),
and a stdio server whose lwtool is killed sees its stdin close. A stdio server's stderr
goes to a temporary file, not to lwtool's: its last lines are shown when it fails to
start."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import tempfile
import threading
from contextlib import AsyncExitStack
from typing import Any, TextIO, cast

from lwtool.mcp.config import ServerSpec

STOP_WAIT = 5.0  # seconds a server has to stop before its connection is cancelled
STDERR_TAIL = 5  # lines of a server's stderr a start failure shows


class McpUnavailable(Exception):
    """A server that could not be started or reached (the message names it)."""


class McpHub:
    def __init__(self, specs: list[ServerSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.clients: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self._stderr: dict[str, TextIO] = {}
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._served: list[concurrent.futures.Future[None]] = []
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="lwtool mcp")
        self._closed = False

    def start(self) -> dict[str, list[Any]]:
        """Connect every server and list its tools: server name -> its `Tool`s."""
        logging.getLogger("mcp").setLevel(logging.ERROR)  # its errors reach the step
        self._thread.start()
        atexit.register(self.close)
        self._stop = self._run(self._event(), 5.0)
        listed: dict[str, list[Any]] = {}
        for spec in self.specs.values():
            ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
            self._served.append(asyncio.run_coroutine_threadsafe(self._serve(spec, ready),
                                                                 self._loop))
            try:  # (the connection's own timeout ends it first, its process with it)
                self.clients[spec.name] = ready.result(timeout=spec.timeout + STOP_WAIT)
            except (TimeoutError, concurrent.futures.TimeoutError):
                self.close()
                said = self._said(spec.name)
                raise McpUnavailable(f"MCP server '{spec.name}' did not answer within "
                                     f"{spec.timeout:g} s ({_where(spec)}){said}") from None
            except Exception as exc:  # noqa: BLE001 - whatever the SDK or the OS raised
                self.close()
                said = self._said(spec.name)
                raise McpUnavailable(f"MCP server '{spec.name}' could not be started "
                                     f"({_where(spec)}): {_reason(exc)}{said}") from None
            listed[spec.name] = self._run(self._list(spec.name), spec.timeout)
        return listed

    def call(self, server: str, tool: str, args: Any) -> concurrent.futures.Future[Any]:
        """Call a tool on the hub's loop; the CallToolResult (or the error) comes in
        the returned future."""
        spec = self.specs[server]
        client = self.clients[server]
        return asyncio.run_coroutine_threadsafe(
            client.call_tool(tool, args, read_timeout_seconds=spec.timeout), self._loop)

    def close(self) -> None:
        """Stop every server (each within its timeout) and the hub's thread."""
        if self._closed or not self._thread.is_alive():
            return
        self._closed = True
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        for served in self._served:  # each leaves its connection (ends its process)
            try:
                served.result(timeout=STOP_WAIT)
            except concurrent.futures.TimeoutError:  # still connecting, or stuck: cancel
                served.cancel()
            except BaseException:  # noqa: BLE001 - it ended with an error: it ended
                continue
            try:
                served.result(timeout=STOP_WAIT)
            except BaseException:  # noqa: BLE001 - cancelled, or would not stop: let it be
                pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _serve(self, spec: ServerSpec, ready: concurrent.futures.Future[Any]) -> None:
        """Hold one server's connection open (entered and left in this one task, as
        the SDK's task groups want) until the hub closes."""
        from mcp import Client

        assert self._stop is not None
        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(spec.timeout):  # connected in time, or ended
                    client = await stack.enter_async_context(
                        Client(self._target(spec), read_timeout_seconds=spec.timeout))
                self.server_info[spec.name] = client.server_info
                ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def _target(self, spec: ServerSpec) -> Any:
        if spec.url is not None:
            return _http(spec)
        from mcp.client.stdio import StdioServerParameters, stdio_client

        assert spec.command is not None
        self._stderr[spec.name] = cast(TextIO, tempfile.TemporaryFile(
            "w+", encoding="utf-8", errors="replace"))
        return stdio_client(StdioServerParameters(
            command=spec.command, args=spec.args, env=spec.env or None, cwd=spec.cwd),
            errlog=self._stderr[spec.name])

    def _said(self, server: str) -> str:
        """`; its stderr ends: ...`: the last lines a stdio server wrote (one line)."""
        log = self._stderr.get(server)
        if log is None:
            return ""
        try:
            log.seek(0)
            lines = [line.strip() for line in log.read()[-4096:].splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {' | '.join(lines[-STDERR_TAIL:])}" if lines else ""

    async def _list(self, server: str) -> list[Any]:
        client, tools, cursor = self.clients[server], [], None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _event(self) -> asyncio.Event:
        return asyncio.Event()

    def _run(self, coroutine: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)


def _http(spec: ServerSpec) -> Any:
    """A streamable HTTP transport with the file's headers (the SDK's, when it takes
    them; else the URL alone)."""
    assert spec.url is not None
    if not spec.headers:
        return spec.url
    import httpx2 as httpx  # the SDK's HTTP client
    from mcp.client.streamable_http import streamable_http_client

    return streamable_http_client(spec.url, http_client=httpx.AsyncClient(
        headers=spec.headers, timeout=spec.timeout))


def _where(spec: ServerSpec) -> str:
    return spec.url or " ".join([spec.command or "", *spec.args]).strip()


def _reason(exc: BaseException) -> str:
    """An error's words; a task group's first inner error (the SDK's are groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__

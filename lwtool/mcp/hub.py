"""The MCP servers of one process, each connected once (`mcp.Client`: a stdio server
started as a child process, or a streamable HTTP one) on an event loop and thread of
their own, so that any run's loop (a worker runs each run on its own) can call their
tools: a call is handed to the hub's loop and its result awaited where it was made.

Servers start when the tools file is loaded (their tools are listed: names, schemas),
all at once, each within its `timeout`: only those whose tools a run names when the
run is known, and one that does not answer is an error for the runs that need its
tools only. A connection lost (a stdio server that died, a timed-out HTTP session) is
started anew on the next call, at most MAX_RESTARTS times in a row.
They stop when the process ends (atexit; the SDK ends a stdio server's process tree),
and a stdio server whose lwtool is killed sees its stdin close. A stdio server's stderr
goes to a temporary file, not to lwtool's: its last lines are shown when it fails to
start."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import sys
import tempfile
import threading
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any, TextIO, cast

from lwtool.mcp.config import ServerSpec

STOP_WAIT = 5.0  # seconds a server has to stop before its connection is cancelled
STDERR_TAIL = 5  # lines of a server's stderr a start failure shows
MAX_RESTARTS = 3  # a lost server started anew this many times in a row, at most


def _stderr_warning(text: str) -> None:
    from lwtool.observe.terminal import safe_text  # a server's words reach a terminal

    sys.stderr.write(f"lwtool: warning: {safe_text(text)}\n")
    sys.stderr.flush()


# Where the SDK's complaints go, one line each (a worker's log sets its own: JSON lines)
warn: list[Callable[[str], None]] = [_stderr_warning]


class _OneLine(logging.Handler):
    """The SDK's log records (a server writing lines that are not JSON-RPC on stdout,
    a read that failed) as one warning line per kind, once a process: no traceback."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("Failed to parse JSONRPC message"):
            text = ("an MCP server wrote a line that is not JSON-RPC on its stdout "
                    "(ignored: a server's own output belongs on stderr)")
        if text in self.said:
            return
        self.said.add(text)
        try:
            warn[0](text)
        except Exception:  # noqa: BLE001 - a warning that cannot be written is dropped
            pass


_one_line = _OneLine()


def quiet_sdk_logs() -> None:
    """Route the SDK's logs through _OneLine, nothing else (idempotent)."""
    logger = logging.getLogger("mcp")
    logger.setLevel(logging.WARNING)
    logger.propagate = False
    if _one_line not in logger.handlers:
        logger.addHandler(_one_line)


class McpUnavailable(Exception):
    """A server that could not be started or reached (the message names it)."""


class McpGaveUp(McpUnavailable):
    """A server whose connection was lost more than MAX_RESTARTS times in a row."""


class McpHub:
    def __init__(self, specs: list[ServerSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}
        self.clients: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self._stderr: dict[str, TextIO] = {}
        self._loop = asyncio.new_event_loop()
        self._stops: dict[str, asyncio.Event] = {}
        self._served: dict[str, concurrent.futures.Future[None]] = {}
        self._lost: set[str] = set()  # servers whose connection was lost: started anew
        self._restarts: dict[str, int] = {}  # restarts since the server's last good call
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="lwtool mcp")
        self._closed = False

    def start(self, names: list[str] | None = None) -> dict[str, list[Any] | McpUnavailable]:
        """Connect the named servers (default: all), all at once, and list their tools:
        server name -> its `Tool`s, or the McpUnavailable that says why it could not be
        had (only the runs that need its tools fail)."""
        quiet_sdk_logs()  # its errors reach the step; its complaints, one line each
        if not self._thread.is_alive():
            self._thread.start()
            atexit.register(self.close)
        wanted = [self.specs[name] for name in (names if names is not None else self.specs)]
        pending = {spec.name: asyncio.run_coroutine_threadsafe(self._connect(spec), self._loop)
                   for spec in wanted}
        listed: dict[str, list[Any] | McpUnavailable] = {}
        for spec in wanted:
            try:  # (the connection's own timeout ends it first, its process with it)
                listed[spec.name] = pending[spec.name].result(timeout=2 * spec.timeout
                                                              + STOP_WAIT)
            except McpUnavailable as exc:
                listed[spec.name] = exc
            except (TimeoutError, concurrent.futures.TimeoutError):
                listed[spec.name] = McpUnavailable(
                    f"MCP server '{spec.name}' did not answer within {spec.timeout:g} s "
                    f"({_where(spec)}){self._said(spec.name)}")
        return listed

    def call(self, server: str, tool: str, args: Any) -> concurrent.futures.Future[Any]:
        """Call a tool on the hub's loop; the CallToolResult (or the error) comes in
        the returned future. A server whose connection was lost is started anew first
        (at most MAX_RESTARTS times in a row without a good call between)."""
        return asyncio.run_coroutine_threadsafe(self._call(server, tool, args), self._loop)

    async def _call(self, server: str, tool: str, args: Any) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        spec = self.specs[server]
        if server in self._lost:
            if self._restarts.get(server, 0) >= MAX_RESTARTS:
                raise McpGaveUp(f"MCP server '{server}' lost its connection "
                                     f"{MAX_RESTARTS + 1} times in a row; it is not "
                                     "started again in this process")
            self._restarts[server] = self._restarts.get(server, 0) + 1
            await self._connect(spec)
        try:
            result = await self.clients[server].call_tool(
                tool, args, read_timeout_seconds=spec.timeout)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                self._lost.add(server)
            raise
        except (OSError, ConnectionError):
            self._lost.add(server)
            raise
        self._restarts.pop(server, None)
        return result

    def close(self) -> None:
        """Stop every server (each within its timeout) and the hub's thread."""
        if self._closed or not self._thread.is_alive():
            return
        self._closed = True
        for stop in list(self._stops.values()):
            self._loop.call_soon_threadsafe(stop.set)
        for served in list(self._served.values()):  # each leaves its connection
            _ended(served)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    async def _connect(self, spec: ServerSpec) -> list[Any]:
        """(Re)connect one server and list its tools (McpUnavailable naming it)."""
        old = self._served.pop(spec.name, None)
        if old is not None:  # a lost connection: leave it (its process ends) first
            self._stops[spec.name].set()
            await asyncio.wait([asyncio.wrap_future(old)], timeout=STOP_WAIT)
        self._lost.discard(spec.name)
        stop = self._stops[spec.name] = asyncio.Event()
        ready: asyncio.Future[Any] = self._loop.create_future()
        self._served[spec.name] = asyncio.run_coroutine_threadsafe(
            self._serve(spec, ready, stop), self._loop)
        try:
            self.clients[spec.name] = await asyncio.wait_for(ready, spec.timeout + STOP_WAIT)
            return await asyncio.wait_for(self._list(spec.name), spec.timeout)
        except TimeoutError:
            self._lost.add(spec.name)
            raise McpUnavailable(f"MCP server '{spec.name}' did not answer within "
                                 f"{spec.timeout:g} s ({_where(spec)})"
                                 f"{self._said(spec.name)}") from None
        except Exception as exc:  # noqa: BLE001 - whatever the SDK or the OS raised
            self._lost.add(spec.name)
            raise McpUnavailable(f"MCP server '{spec.name}' could not be started "
                                 f"({_where(spec)}): {_reason(exc)}"
                                 f"{self._said(spec.name)}") from None

    async def _serve(self, spec: ServerSpec, ready: asyncio.Future[Any],
                     stop: asyncio.Event) -> None:
        """Hold one server's connection open (entered and left in this one task, as
        the SDK's task groups want) until it is stopped."""
        from mcp import Client

        try:
            async with AsyncExitStack() as stack:
                async with asyncio.timeout(spec.timeout):  # connected in time, or ended
                    client = await stack.enter_async_context(
                        Client(self._target(spec), read_timeout_seconds=spec.timeout))
                self.server_info[spec.name] = client.server_info
                ready.set_result(client)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:  # the connection ended under a client in use: start it anew next call
                self._lost.add(spec.name)
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


def _ended(served: concurrent.futures.Future[None]) -> None:
    """Wait for a connection's task to end (cancelled when it will not)."""
    try:
        served.result(timeout=STOP_WAIT)
        return
    except concurrent.futures.TimeoutError:  # still connecting, or stuck: cancel
        served.cancel()
    except BaseException:  # noqa: BLE001 - it ended with an error: it ended
        return
    try:
        served.result(timeout=STOP_WAIT)
    except BaseException:  # noqa: BLE001 - cancelled, or would not stop: let it be
        pass


def _where(spec: ServerSpec) -> str:
    return spec.url or " ".join([spec.command or "", *spec.args]).strip()


def _reason(exc: BaseException) -> str:
    """An error's words; a task group's first inner error (the SDK's are groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__

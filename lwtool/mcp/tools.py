"""The tools of an MCP servers file as a ToolRegistry: each tool of server S is `S.TOOL`
(its description, input schema and output schema from `tools/list`), an async callable
that checks its input against that schema, calls the server through the process's hub
(lwtool.mcp.hub) and returns the result's `structuredContent`, else its text content
(as JSON when it is JSON). An `isError` result or an error reply fails the call with
the server's words (ToolFailed); a server that is away or too slow is a transient
failure (the step's retry policy applies). A tool's fingerprint (what a run's manifest
pins, lwtool.harness.fingerprints.tool_fingerprint) is its server's name with its name,
description and schemas: a changed schema is capability drift. Its origin (the server,
the name and version the server gives itself, a hash of the schemas) is recorded beside
it in the run's manifest: a new server version with the same schemas is no drift."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from lwtool.capability.hosts import ConnectionDenied, HostPattern
from lwtool.mcp.config import ServerSpec, read_servers
from lwtool.mcp.hub import McpGaveUp, McpHub, McpUnavailable
from lwtool.record.errors import TransientError
from lwtool.record.ids import short_hash
from lwtool.sandbox.egress import EgressProxy
from lwtool.tools import Refused, ToolFailed, ToolRegistry
from lwtool.validate.context import named_tools


def load_servers(path: str, needed: Iterable[str] | None = None,
                 secrets: Mapping[str, Mapping[str, str]] | None = None,
                 confine: list[HostPattern] | None = None) -> ToolRegistry:
    """Start the file's servers (only those whose tools `needed` names, when given) and
    register their tools (McpConfigError). A server that cannot be had is noted in the
    registry's `unavailable` with why: the runs that need its tools fail saying so.
    ImportError when the MCP SDK is not installed, before anything starts.
    `secrets` (server -> name -> value: what the steps calling its tools are granted)
    is added to a stdio server's environment, which otherwise holds only the SDK's
    safe defaults (HOME, PATH, ...) and what its entry's `env` sets. `confine` (the
    workflow's permissions.network, `--confine-tools`): each stdio server runs in
    bubblewrap, its network the egress proxy's (lwtool.sandbox.confined)."""
    import mcp.client.stdio  # noqa: F401 - the SDK, or ImportError here and now

    proxies: dict[str, EgressProxy] = {}
    specs = [_with_secrets(spec, (secrets or {}).get(spec.name))
             for spec in read_servers(path)]
    if confine is not None:
        specs = [_confined(spec, confine, proxies) for spec in specs]
    hub = McpHub(specs)
    names = None if needed is None else \
        sorted({str(n).partition(".")[0] for n in needed} & set(hub.specs))
    registry = ToolRegistry(served=True)
    for server, tools in hub.start(names).items():
        if isinstance(tools, McpUnavailable):
            registry.unavailable[server] = str(tools)
            continue
        twice = sorted(name for name, n in Counter(t.name for t in tools).items() if n > 1)
        if twice:
            registry.unavailable[server] = (f"MCP server '{server}' lists the tool "
                                            f"'{twice[0]}' twice: its tools are ambiguous")
            continue
        info = hub.server_info.get(server)
        for tool in tools:
            output_schema = getattr(tool, "output_schema", None)
            registry.register(f"{server}.{tool.name}",
                              _caller(hub, server, tool, proxies.get(server)),
                              tool.description or "", tool.input_schema, output_schema,
                              endpoint=hub.specs[server].url,
                              origin={"mcpServer": server,
                                      "serverName": getattr(info, "name", None),
                                      "serverVersion": getattr(info, "version", None),
                                      "schemaHash": short_hash([tool.input_schema,
                                                                output_schema])})
    return registry


def _with_secrets(spec: ServerSpec, values: Mapping[str, str] | None) -> ServerSpec:
    if not values or spec.url is not None:  # an HTTP server runs elsewhere
        return spec
    return replace(spec, env={**values, **spec.env})


def server_grants(lwir: Mapping[str, Any]) -> dict[str, set[str]]:
    """Server -> the secret names granted to the tool.call steps that call its tools
    (SERVER.TOOL) and the ai.agent steps that offer them, in every step list of `lwir`."""
    found: dict[str, set[str]] = {}
    todo = list(lwir.get("steps") or [])
    while todo:
        step = todo.pop()
        if not isinstance(step, Mapping):
            continue
        todo.extend(step.get("steps") or [])
        for _, tool in named_tools(step) if step.get("secrets") else []:
            if isinstance(tool, str) and "." in tool:
                found.setdefault(tool.partition(".")[0], set()).update(
                    str(n) for n in step["secrets"])
    return found


def granted_values(lwir: Mapping[str, Any] | None) -> dict[str, dict[str, str]]:
    """server_grants with their values from the current secret broker (a name it lacks
    is left out: the run that needs it is refused, naming it)."""
    from lwtool.capability.secrets import current_broker

    if not lwir:
        return {}
    values = current_broker().values
    return {server: {n: values[n] for n in sorted(names) if n in values}
            for server, names in server_grants(lwir).items()}


def _confined(spec: ServerSpec, patterns: list[HostPattern],
              proxies: dict[str, EgressProxy]) -> ServerSpec:
    """A stdio server's spec started inside bubblewrap behind its own egress proxy."""
    if spec.command is None:
        return spec
    import atexit

    from lwtool.sandbox.confined import confined_argv

    proxy = proxies[spec.name] = EgressProxy(patterns).start()
    atexit.register(proxy.close)
    argv = confined_argv([spec.command, *spec.args], proxy.socket_path, spec.cwd)
    return replace(spec, command=argv[0], args=argv[1:])


def _caller(hub: McpHub, server: str, tool: Any, proxy: EgressProxy | None = None) -> Any:
    name, schema = tool.name, tool.input_schema

    async def call(args: Any) -> Any:
        mark = len(proxy.denied) if proxy is not None else 0
        try:
            return await _call(args)
        finally:
            if proxy is not None and proxy.denied_since(mark):
                # what the server was refused while this call was in flight
                raise ConnectionDenied(proxy.denied_since(mark), f"MCP server '{server}'")

    async def _call(args: Any) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, REQUEST_TIMEOUT

        from lwtool.steps.outputs import OutputInvalid, check_schema

        try:
            check_schema(args, schema, "the input")
        except OutputInvalid as exc:
            raise Refused(f"{exc} (the schema MCP server '{server}' lists)") from None
        try:
            result = await asyncio.wrap_future(hub.call(server, name, args))
        except MCPError as exc:
            # a timed-out request, a connection that ended, an HTTP server's 5xx (the
            # SDK's INTERNAL_ERROR): for the step's retry policy
            if exc.code in (REQUEST_TIMEOUT, CONNECTION_CLOSED, INTERNAL_ERROR):
                raise TransientError(f"MCP server '{server}' did not answer: {exc}") from None
            raise ToolFailed(f"MCP server '{server}' answered with an error: {exc}") from None
        except McpGaveUp as exc:
            raise ToolFailed(str(exc)) from None
        except (McpUnavailable, TimeoutError, OSError, ConnectionError) as exc:
            raise TransientError(f"MCP server '{server}' did not answer: "
                                 f"{exc or type(exc).__name__}") from None
        except RuntimeError as exc:  # the SDK's check of structuredContent
            raise ToolFailed(_unfit(server, name, exc)) from None
        if result.is_error:
            raise ToolFailed(f"MCP server '{server}': {_text(result) or 'the call failed'}")
        return _output(result)

    call.__lwtool_version__ = f"mcp:{server}"  # type: ignore[attr-defined]
    call.__qualname__ = f"{server}.{name}"
    return call


def _unfit(server: str, tool: str, exc: RuntimeError) -> str:
    """The SDK's refusal of a result as one plain line: the tool, the server and the
    first schema error (not its class, the schema dump or where it is installed)."""
    cause = exc.__cause__
    if cause is not None and hasattr(cause, "message"):
        where = "/".join(str(p) for p in getattr(cause, "absolute_path", []))
        return (f"MCP server '{server}': tool '{tool}' returned structured content that "
                f"does not fit its outputSchema: {cause.message}"
                + (f" (at /{where})" if where else ""))
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"MCP server '{server}': tool '{tool}': {first}"


def _output(result: Any) -> Any:
    """structuredContent, else the text content (parsed when it is JSON)."""
    if result.structured_content is not None:
        return result.structured_content
    text = _text(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _text(result: Any) -> str:
    return "\n".join(part.text for part in result.content or []
                     if getattr(part, "type", None) == "text")

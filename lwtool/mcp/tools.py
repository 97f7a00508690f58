"""The tools of an MCP servers file as a ToolRegistry: each tool of server S is `S.TOOL`
(its description, input schema and output schema from `tools/list`), an async callable
that checks its input against that schema, calls the server through the process's hub
(lwtool.mcp.hub) and returns the result's `structuredContent`, else its text content
(as JSON when it is JSON). An `isError` result or an error reply fails the call with
the server's words (ToolFailed); a server that is away or too slow is a transient
failure (the step's retry policy applies). A tool's fingerprint (what a run's manifest
pins, lwtool.harness.agent.tool_fingerprint) is its server's name with its name,
description and schemas: a changed schema is capability drift. Its origin (the server,
the name and version the server gives itself, a hash of the schemas) is recorded beside
it in the run's manifest: a new server version with the same schemas is no drift."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from lwtool.mcp.config import read_servers
from lwtool.mcp.hub import McpHub
from lwtool.record.errors import TransientError
from lwtool.record.ids import short_hash
from lwtool.tools import Refused, ToolFailed, ToolRegistry


def load_servers(path: str) -> ToolRegistry:
    """Start the file's servers and register their tools (McpConfigError, McpUnavailable)."""
    hub = McpHub(read_servers(path))
    registry = ToolRegistry()
    for server, tools in hub.start().items():
        info = hub.server_info.get(server)
        for tool in tools:
            output_schema = getattr(tool, "output_schema", None)
            registry.register(f"{server}.{tool.name}", _caller(hub, server, tool),
                              tool.description or "", tool.input_schema, output_schema,
                              origin={"mcpServer": server,
                                      "serverName": getattr(info, "name", None),
                                      "serverVersion": getattr(info, "version", None),
                                      "schemaHash": short_hash([tool.input_schema,
                                                                output_schema])})
    return registry


def _caller(hub: McpHub, server: str, tool: Any) -> Any:
    name, schema = tool.name, tool.input_schema

    async def call(args: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        from lwtool.steps.outputs import OutputInvalid, check_schema

        try:
            check_schema(args, schema, "the input")
        except OutputInvalid as exc:
            raise Refused(f"{exc} (the schema MCP server '{server}' lists)") from None
        try:
            result = await asyncio.wrap_future(hub.call(server, name, args))
        except MCPError as exc:
            raise ToolFailed(f"MCP server '{server}' answered with an error: {exc}") from None
        except (TimeoutError, OSError, ConnectionError) as exc:
            raise TransientError(f"MCP server '{server}' did not answer: "
                                 f"{exc or type(exc).__name__}") from None
        if result.is_error:
            raise ToolFailed(f"MCP server '{server}': {_text(result) or 'the call failed'}")
        return _output(result)

    call.__lwtool_version__ = f"mcp:{server}"  # type: ignore[attr-defined]
    call.__qualname__ = f"{server}.{name}"
    return call


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

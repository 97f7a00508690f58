"""An MCP servers file, as MCP clients share it (`--tools FILE.json|FILE.yaml`):

    {"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"],
                             "env": {"TZ": "UTC"}},
                    "docs": {"url": "https://example.com/mcp",
                             "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}}}

A server is a command (stdio: lwtool starts it) or a `url` (streamable HTTP). `${NAME}`
in `env` and `headers` values is the environment variable NAME (one that is not set is
an error naming it: a key is never written in the file). `timeout` (seconds, default
30) bounds the server's start and each call. Its tools are named `SERVER.TOOL`."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

DEFAULT_TIMEOUT = 30.0
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpConfigError(ValueError):
    """A servers file lwtool cannot use (its message names the file and the place)."""


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT


def read_servers(path: str) -> list[ServerSpec]:
    """The servers of a file, in its order (McpConfigError naming what is wrong)."""
    from lwtool.source.loader import LoadFailed, load_path

    try:
        document = load_path(path)
    except FileNotFoundError:
        raise McpConfigError(f"MCP servers file {path} does not exist") from None
    except OSError as exc:
        raise McpConfigError(f"cannot read MCP servers file {path}: "
                             f"{exc.strerror or exc}") from None
    except LoadFailed as failed:
        first = failed.findings[0]
        raise McpConfigError(f"{first.path}:{first.line}:{first.column}: "
                             f"{first.message}") from None
    value = document.value
    servers = value.get("mcpServers") if isinstance(value, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise McpConfigError(f"{path}: expected {{\"mcpServers\": {{NAME: {{\"command\": "
                             "...}} or {{\"url\": ...}}}}}} with at least one server")
    return [_server(path, name, entry) for name, entry in servers.items()]


def _server(path: str, name: str, entry: Any) -> ServerSpec:
    where = f"{path}: mcpServers.{name}"
    if not SERVER_NAME.fullmatch(name):
        raise McpConfigError(f"{where}: a server's name is letters, digits, _ and - (its "
                             "tools are named NAME.TOOL)")
    if not isinstance(entry, dict):
        raise McpConfigError(f"{where}: expected an object with `command` or `url`")
    known = {"command", "args", "env", "cwd", "url", "headers", "timeout", "type"}
    unknown = sorted(set(entry) - known)
    if unknown:
        raise McpConfigError(f"{where}: unknown key {unknown[0]!r} (known: "
                             f"{', '.join(sorted(known))})")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise McpConfigError(f"{where}: give `command` (a server lwtool starts) or `url` "
                             "(a streamable HTTP server), one of them")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not math.isfinite(timeout) or timeout <= 0:
        raise McpConfigError(f"{where}.timeout: a number of seconds above 0, not {timeout!r}")
    return ServerSpec(
        name=name, command=_text(where, "command", command) if command is not None else None,
        args=[_text(where, "args", a) for a in _list(where, "args", entry.get("args", []))],
        env=_expanded(where, "env", entry.get("env", {})),
        cwd=_text(where, "cwd", entry["cwd"]) if "cwd" in entry else None,
        url=_text(where, "url", url) if url is not None else None,
        headers=_expanded(where, "headers", entry.get("headers", {})),
        timeout=float(timeout))


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise McpConfigError(f"{where}.{key}: expected a non-empty string, not {value!r}")
    return value


def _list(where: str, key: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise McpConfigError(f"{where}.{key}: expected a list of strings")
    return value


def _expanded(where: str, key: str, value: Any) -> dict[str, str]:
    """`env` or `headers`, each `${NAME}` replaced by the environment's NAME."""
    if not isinstance(value, dict):
        raise McpConfigError(f"{where}.{key}: expected an object of strings")
    out = {}
    for item, text in value.items():
        if not isinstance(text, str):
            raise McpConfigError(f"{where}.{key}.{item}: expected a string")

        def variable(match: re.Match[str], item: str = item) -> str:
            found = os.environ.get(match.group(1))
            if found is None:
                raise McpConfigError(f"{where}.{key}.{item}: the environment variable "
                                     f"{match.group(1)} is not set")
            return found

        out[item] = _VARIABLE.sub(variable, text)
    return out

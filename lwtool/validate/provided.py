"""`lwtool validate --tools ...`: every tool a file declares (a workflow's
`permissions.tools`, a definition's `tools`) must be one the given tools provide: an
MCP server that lists it (SERVER.TOOL), a module that registers it. Each one missing
is a `tools.unavailable` finding at its entry, naming what its server does list.

And where a workflow lists hosts in `permissions.network`, a `tools.network_unenforced`
warning at each tool.call (or tool an ai.agent step offers) of a tool lwtool cannot
hold to that list: a Python tool (it runs in lwtool's process) or a stdio MCP server's
(its own process); an HTTP MCP server's URL is checked, and code.run is confined by
Deno."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lwtool.source.finding import Finding, Severity
from lwtool.validate.context import did_you_mean, named_tools

CODE = "tools.unavailable"


def declared_tools(document: Any, kind: str | None) -> tuple[list[Any], str]:
    """A file's declared tools (a workflow's `permissions.tools`, a definition's
    `tools`) and the JSON Pointer of their list."""
    value = document.value if isinstance(document.value, dict) else {}
    if kind == "Workflow":
        permissions = value.get("permissions")
        listed, pointer = (permissions or {}).get("tools") if isinstance(
            permissions, dict) else None, "/permissions/tools"
    elif kind == "WorkflowDefinition":
        listed, pointer = value.get("tools"), "/tools"
    else:
        return [], ""
    return (listed if isinstance(listed, list) else []), pointer


def unavailable_tools(document: Any, kind: str | None, provided: Iterable[str]) -> list[Finding]:
    """The findings for `document`'s declared tools that `provided` lacks."""
    listed, pointer = declared_tools(document, kind)
    names = set(provided)
    found = []
    for index, name in enumerate(listed):
        if isinstance(name, str) and name not in names:
            where = f"{pointer}/{index}"
            found.append(Finding(CODE, _message(name, names), document.path, where,
                                 document.source_map.span(where)))
    return found


UNENFORCED = "tools.network_unenforced"


def unenforced_network(document: Any, kind: str | None, tools: dict[str, Any]) -> list[Finding]:
    """`tools.network_unenforced` warnings (see the module) for a workflow's tool.call
    and ai.agent steps; `tools` is the given registry's name -> Tool."""
    value = document.value if isinstance(document.value, dict) else {}
    permissions = value.get("permissions") if kind == "Workflow" else None
    if not isinstance(permissions, dict) or not permissions.get("network"):
        return []
    found = []
    for where, name in _step_tools(value.get("steps"), "/steps"):
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is None or tool.endpoint is not None:
            continue
        what = "a stdio MCP server's tool (its own process)" if tool.origin \
            else "a Python tool (it runs inside lwtool)"
        found.append(Finding(UNENFORCED, f"tool '{name}' is {what}: permissions.network is "
                             "not enforced for it (README: Permissions, what is enforced "
                             "where)", document.path, where,
                             document.source_map.span(where), Severity.WARNING))
    return found


def _step_tools(steps: Any, pointer: str) -> list[tuple[str, Any]]:
    """(pointer, tool name) of each tool a tool.call step calls or an ai.agent step
    offers, parallel bodies included."""
    found: list[tuple[str, Any]] = []
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        found += [(f"{pointer}/{index}{where}", name) for where, name in named_tools(step)]
        found += _step_tools(step.get("steps"), f"{pointer}/{index}/steps")
    return found


def _message(name: str, provided: set[str]) -> str:
    server, dot, _ = name.partition(".")
    own = sorted(n.partition(".")[2] for n in provided if dot and n.startswith(server + "."))
    if own:
        return (f"tool '{name}' is not provided: MCP server '{server}' lists "
                f"{', '.join(own)}{did_you_mean(name, provided)}")
    given = ", ".join(sorted(provided)) or "none"
    return (f"tool '{name}' is not provided by the tools given ({given})"
            f"{did_you_mean(name, provided)}")

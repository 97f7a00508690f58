"""`lwtool validate --tools ...`: every tool a file declares (a workflow's
`permissions.tools`, a definition's `tools`) must be one the given tools provide: an
MCP server that lists it (SERVER.TOOL), a module that registers it. Each one missing
is a `tools.unavailable` finding at its entry, naming what its server does list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lwtool.source.finding import Finding
from lwtool.validate.context import did_you_mean

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


def _message(name: str, provided: set[str]) -> str:
    server, dot, _ = name.partition(".")
    own = sorted(n.partition(".")[2] for n in provided if dot and n.startswith(server + "."))
    if own:
        return (f"tool '{name}' is not provided: MCP server '{server}' lists "
                f"{', '.join(own)}{did_you_mean(name, provided)}")
    given = ", ".join(sorted(provided)) or "none"
    return (f"tool '{name}' is not provided by the tools given ({given})"
            f"{did_you_mean(name, provided)}")

"""Completion: step ids where the cursor expects one (`steps.` in an expression,
`needs`, a decision's `to`/`default`), accessors after `steps.<id>.`, and inside a
step the names its permissions list: a tool after `tool:` (tool.call) or in `tools:`
(ai.agent), a model slot after `model:`."""

from __future__ import annotations

import re

from lwtool.expr.ast import STEP_ACCESSORS
from lwtool.lsp.analysis import Analysis
from lwtool.source.position import Pos
from lwtool.validate.context import StepInfo

_EXPR_STEPS = re.compile(r"\{\{[^}]*\bsteps\.([A-Za-z0-9_-]*)$")
_EXPR_ACCESSOR = re.compile(r"\{\{[^}]*\bsteps\.([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z]*)$")
# Keys may be quoted (JSON, or quoted YAML keys): `needs: [`, `"needs": ["a", "`.
_NEEDS = re.compile(r"(^|[\s{,\"'])needs[\"']?\s*:\s*\[?([^\]]*)$|^\s*-\s*[A-Za-z0-9_-]*$")
_TARGET = re.compile(r"(^|[\s{,\"'])(to|default)[\"']?\s*:\s*[\"']?[A-Za-z0-9_-]*$")
# A permitted name (MCP tools hold dots): `tool: `, `tools: [a, `, `model: `.
_NAME = r"[\"']?[A-Za-z0-9_.:/-]*$"
_ITEM = re.compile(r"^\s*-\s*[A-Za-z0-9_.:/-]*$")  # a block list's item
_PERMITTED = {"tools": re.compile(r"(^|[\s{,\"'])(tool[\"']?\s*:\s*|tools[\"']?\s*:\s*"
                                  r"\[[^\]]*?)" + _NAME),
              "models": re.compile(r"(^|[\s{,\"'])model[\"']?\s*:\s*" + _NAME)}


_TYPED = re.compile(r"[A-Za-z0-9_-]*$")


def completions(analysis: Analysis, fallback: Analysis | None, pos: Pos,
                line_prefix: str) -> list[tuple[str, str]]:
    """(label, detail) items for the text before the cursor, filtered by the word typed
    so far; a step is never offered to itself. The structure comes from the current
    analysis, or from the last one that loaded while the text is broken."""
    source = analysis if analysis.context is not None else fallback
    if source is None or source.context is None:
        return []
    owner, scope_steps = _scope_near(source, pos)
    typed = _TYPED.search(line_prefix)
    prefix = typed.group(0) if typed else ""
    if (match := _EXPR_ACCESSOR.search(line_prefix)) is not None:
        return [(name, f"steps.{match.group(1)}.{name}") for name in STEP_ACCESSORS
                if name.startswith(match.group(2))]
    others = [(s.id, s.uses) for s in scope_steps
              if s.id.startswith(prefix) and (owner is None or s.id != owner.id)]
    if _EXPR_STEPS.search(line_prefix):
        return others
    if _TARGET.search(line_prefix):
        return others + ([("end", "end this scope")] if "end".startswith(prefix) else [])
    if _NEEDS.search(line_prefix) and ("needs" in line_prefix or _in_list(source, pos)):
        return others
    if owner is not None:  # in a step: what its permissions list
        for kind, pattern in _PERMITTED.items():
            if pattern.search(line_prefix) or (kind == "tools" and _ITEM.search(line_prefix)
                                               and _in_list(source, pos, "tools")):
                typed_name = re.search(r"[A-Za-z0-9_.:/-]*$", line_prefix)
                start = typed_name.group(0) if typed_name else ""
                return [(name, f"permissions.{kind}")
                        for name in sorted(source.context.permitted(kind))
                        if name.startswith(start)]
    return []


def _scope_near(analysis: Analysis, pos: Pos) -> tuple[StepInfo | None, list[StepInfo]]:
    """The step the cursor stands in (None at the top level) and the steps of its scope
    (the top level when unsure)."""
    assert analysis.context is not None
    owner = None
    for info in analysis.context.steps:
        span = analysis.span_of(info.pointer)
        if span.start <= pos <= span.end:
            owner = info
    scope = owner.scope if owner is not None else ""
    return owner, list(analysis.context.in_scope(scope).values())


def _in_list(analysis: Analysis, pos: Pos, key: str = "needs") -> bool:
    """Whether the line above the cursor opens or continues a `key:` block list."""
    lines = analysis.text.split("\n")
    for index in range(pos.line - 2, -1, -1):
        line = lines[index].strip() if index < len(lines) else ""
        if line.startswith("- "):
            continue
        return line.rstrip(":").endswith(key)
    return False

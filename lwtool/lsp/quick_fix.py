"""Quick fixes: add a missing need to a reader's `needs`, add a tool or model slot
to `permissions` (flow or block lists, a new key; YAML or JSON), or use the permitted
name a misspelt one is nearest to."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lwtool.lsp.analysis import Analysis
from lwtool.source.position import Pos
from lwtool.validate.context import StepInfo


@dataclass(frozen=True)
class TextInsert:
    """Insert `text` at a 1-based position."""

    at: Pos
    text: str


def missing_need_fix(analysis: Analysis, finding_start: Pos) -> tuple[str, TextInsert] | None:
    """For a `step.missing_dependency` reference at `finding_start`: the title and the
    insertion that adds the read step to the reader's `needs` (flow or block lists, a new
    `needs` key, YAML or JSON)."""
    if analysis.document is None or analysis.context is None:
        return None
    offset = analysis.offset(finding_start)
    reference = analysis.reference_at(offset)
    located = analysis.owner_at(offset)
    if reference is None or located is None:
        return None
    target, owner = reference[0], located[1]
    if target.id in owner.needs or target.scope != owner.scope:
        return None
    title = f"Add '{target.id}' to the needs of '{owner.id}'"
    insert = _needs_insert(analysis, owner, target.id)
    return (title, insert) if insert is not None else None


def _needs_insert(analysis: Analysis, owner: StepInfo, need: str) -> TextInsert | None:
    return (_list_append(analysis, f"{owner.pointer}/needs", owner.step.get("needs") or [],
                         need)
            or _key_before(analysis, f"{owner.pointer}/uses", "needs", need))


def _word(analysis: Analysis, value: str) -> str:
    assert analysis.document is not None
    return json.dumps(value) if analysis.document.format == "json" else value


def _list_append(analysis: Analysis, pointer: str, items: list[Any],
                 value: str) -> TextInsert | None:
    """Append `value` to the list at `pointer` (flow or block); None when no list is there."""
    assert analysis.document is not None
    text = analysis.text
    word = _word(analysis, value)
    entries = analysis.document.source_map.entries
    to_pos = analysis.document.source_map.to_pos
    found = entries.get(pointer)
    if found is None:
        return None
    start, end = found[0], found[1]
    if text[start] == "[":  # a flow list: before its closing bracket
        close = text.rindex("]", start, end)
        return TextInsert(Pos(*to_pos(close)), word if not items else f", {word}")
    last = entries.get(f"{pointer}/{len(items) - 1}")
    if last is None:
        return None
    column = to_pos(last[0])[1]
    indent = " " * max(column - 3, 0)  # the item's value stands after "- "
    return TextInsert(Pos(*to_pos(last[1])), f"\n{indent}- {word}")


def _key_before(analysis: Analysis, anchor: str, key: str, value: str) -> TextInsert | None:
    """A new `key: [value]` in the mapping holding the key at `anchor`: before it in a
    flow mapping (and in JSON), else on the line after it, at its indent."""
    assert analysis.document is not None
    text = analysis.text
    json_like = analysis.document.format == "json"
    entries = analysis.document.source_map.entries
    to_pos = analysis.document.source_map.to_pos
    found = entries.get(anchor)
    if found is None or found[2] is None:
        return None
    key_start = found[2]
    word = _word(analysis, value)
    before = text[:key_start].rstrip(" \t")
    if json_like or before.endswith(("{", ",")):  # a flow mapping: a key before the anchor
        name = json.dumps(key) if json_like else key
        return TextInsert(Pos(*to_pos(key_start)), f"{name}: [{word}], ")
    line_end = text.find("\n", found[1])
    line_end = len(text) if line_end < 0 else line_end
    indent = " " * (to_pos(key_start)[1] - 1)
    return TextInsert(Pos(*to_pos(line_end)), f"\n{indent}{key}: [{word}]")


# -- quick fix: permit a tool or a model slot ------------------------------------------

_UNPERMITTED = re.compile(r"^(?:tool|model slot) '(.+)' is not in permissions\.(tools|models)")


def missing_permission_fix(analysis: Analysis, message: str) -> tuple[str, TextInsert] | None:
    """For `permissions.unknown_tool` / `permissions.unknown_model` (the message names
    the tool or slot): add it to `permissions.tools` / `.models`, or add that list."""
    match = _UNPERMITTED.match(message)
    document = analysis.document
    if match is None or document is None or not isinstance(document.value, dict):
        return None
    name, kind = match.group(1), match.group(2)
    permissions = document.value.get("permissions")
    if not isinstance(permissions, dict):
        return None
    listed = permissions.get(kind)
    if isinstance(listed, list) and name in listed:
        return None
    title = f"Add '{name}' to permissions.{kind}"
    if isinstance(listed, list):
        insert = _list_append(analysis, f"/permissions/{kind}", listed, name)
    elif kind in permissions or not permissions:
        return None  # a value that is not a list, or `permissions: {}`: rewrite by hand
    else:
        first = next(iter(permissions)).replace("~", "~0").replace("/", "~1")
        insert = _key_before(analysis, f"/permissions/{first}", kind, name)
    return (title, insert) if insert is not None else None


_NEAREST = re.compile(r"^(?:(?:tool|model slot) '(.+)' is not in permissions\.\w+ .*"
                      r"|unknown field '(.+)'); did you mean '(.+)'\?$")


def nearest_name_fix(message: str, written: str) -> tuple[str, str] | None:
    """For `permissions.unknown_tool` / `unknown_model` naming a near permitted name,
    and `lwir.invalid_field` naming the field a misspelt key meant (`plannr` ->
    `planner`): the title and the text to put in the diagnostic's range (`written`, the
    name or key as the file has it, quoted or not, with the name replaced)."""
    match = _NEAREST.match(message)
    if match is None:
        return None
    typed, meant = match.group(1) or match.group(2), match.group(3)
    if typed not in written:
        return None
    return f"Change '{typed}' to '{meant}'", written.replace(typed, meant, 1)

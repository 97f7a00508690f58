"""Definition and pipeline files in the editor: go to the file an entry names (a
pipeline's `workflows:` entries, a definition's `planner.plan`, a workflow.invoke's
`with.workflow`), and hover on a field
with its description from the file's JSON Schema (definition.schema.json,
pipeline.schema.json: what `lwtool validate` checks it against)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwtool.source import pointer as pointers
from lwtool.source.position import Span
from lwtool.validate.run import document_kind

SCHEMAS = {"WorkflowDefinition": "definition.schema.json", "Pipeline": "pipeline.schema.json"}


def kind_of(analysis: Any) -> str | None:
    """A definition's or pipeline's kind (None for anything else)."""
    kind = document_kind(analysis.document) if analysis.document is not None else None
    return kind if kind in SCHEMAS else None


def linked_file(analysis: Any, offset: int, here: Path) -> tuple[Path, Span] | None:
    """The file the entry under `offset` names (relative to this file, `here`), if it
    exists, and the entry's span."""
    document = analysis.document
    kind = document_kind(document) if document is not None else None
    found = analysis.pointer_at(offset)
    if kind is None or found is None or found[1]:
        return None
    pointer = found[0]
    parts = pointers.split(pointer)
    linking = (kind == "Pipeline" and len(parts) == 2 and parts[0] == "workflows") or \
        (kind == "WorkflowDefinition" and parts == ["planner", "plan"]) or \
        (kind == "Workflow" and parts[-2:] == ["with", "workflow"] and _invokes(
            document.value, pointers.from_parts(parts[:-2])))
    if not linking:
        return None
    value = pointers.resolve(analysis.document.value, pointer)
    if not isinstance(value, str) or not value:
        return None
    target = (here.parent / value).resolve()
    return (target, analysis.span_of(pointer)) if target.is_file() else None


def _invokes(value: Any, step_pointer: str) -> bool:
    """Whether the step at `step_pointer` is a workflow.invoke (its `with.workflow`
    names a child file)."""
    try:
        step = pointers.resolve(value, step_pointer)
    except (KeyError, IndexError, ValueError, TypeError):
        return False
    return isinstance(step, dict) and step.get("uses") == "workflow.invoke"


def field_hover(analysis: Any, offset: int) -> tuple[str, Span] | None:
    """The description of the field whose key (or value) is under `offset`."""
    from lwtool._resources import load_schema

    kind, found = kind_of(analysis), analysis.pointer_at(offset)
    if kind is None or found is None or not found[0]:
        return None
    schema: Any = load_schema(SCHEMAS[kind])
    parts = pointers.split(found[0])
    for part in parts:
        schema = _child(schema, part)
        if schema is None:
            return None
    about = schema.get("description") if isinstance(schema, dict) else None
    if not about:
        return None
    name = next((p for p in reversed(parts) if not p.isdigit()), parts[-1])
    return f"**{name}**: {about}", analysis.span_of(found[0], key=found[1])


def _child(schema: Any, part: str) -> Any:
    if not isinstance(schema, dict):
        return None
    if part.isdigit() and "items" in schema:
        return schema["items"]
    properties = schema.get("properties")
    return properties.get(part) if isinstance(properties, dict) else None

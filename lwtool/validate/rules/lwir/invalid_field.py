"""A field is missing, unknown, or of the wrong type or value for the LWIR format.

## What it flags
Anything the LWIR JSON Schema (`schemas/lwir.schema.json`) rejects: a missing required
field, a field the format does not have, a value of the wrong type or outside its enum.
WorkflowDefinition files are checked against `schemas/definition.schema.json`, Pipeline
files against `schemas/pipeline.schema.json`.

## Why
The runtime reads only what the format defines. A misspelt field would otherwise be
silently ignored and the step would run without it.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: fetchCandidates}
    retries: 3
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: fetchCandidates}
    retry: {maxAttempts: 3}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from lwtool._resources import load_schema
from lwtool.canonical.plain_json import may_hold_lone_surrogate
from lwtool.source import pointer as jp
from lwtool.source.finding import Finding
from lwtool.validate.context import Context, did_you_mean

CODE = "lwir.invalid_field"
APPLIES_TO = ("Workflow", "WorkflowDefinition", "Pipeline")
_SCHEMA_FILES = {"Workflow": "lwir.schema.json", "WorkflowDefinition": "definition.schema.json",
                 "Pipeline": "pipeline.schema.json"}


@cache
def validator(kind: str) -> Any:
    """The compiled validator for a document kind (compiled once per process)."""
    import jsonschema_rs

    return jsonschema_rs.Draft202012Validator(load_schema(_SCHEMA_FILES[kind]))


def _describe(value: Any) -> str:
    from lwtool.expr.functions import type_name

    return type_name(value)


def _without_lone_surrogates(value: Any) -> Any:
    """A copy with lone surrogates replaced by "?": the schema engine cannot take
    them, and lwir.not_canonicalizable reports them."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_without_lone_surrogates(k): _without_lone_surrogates(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_lone_surrogates(v) for v in value]
    return value


def check(ctx: Context) -> Iterator[Finding]:
    value = ctx.value
    if may_hold_lone_surrogate(ctx.document.text):
        value = _without_lone_surrogates(value)
    for error in validator(ctx.kind).iter_errors(value):
        yield from _findings(ctx, error)


def _findings(ctx: Context, error: Any) -> Iterator[Finding]:
    pointer = jp.from_parts(error.instance_path)
    kind = type(error.kind).__name__
    if kind == "OneOfNotValid" and list(error.schema_path)[-3:] == ["$defs", "step", "oneOf"]:
        yield from _step_findings(ctx, error)
    elif kind == "Enum" and error.instance_path and error.instance_path[-1] == "uses":
        return  # step.unknown_type reports it with the list of types
    elif kind == "AdditionalProperties":
        allowed = _allowed_at(ctx.kind, error)
        for name in error.kind.unexpected:
            yield ctx.finding(jp.join(pointer, name),
                              f"unknown field '{name}'{did_you_mean(name, allowed)}", key=True)
    elif kind == "Required":
        where = f" in {pointer}" if pointer else ""
        yield ctx.finding(pointer, f"missing required field '{error.kind.property}'{where}",
                          key=True)
    elif kind == "Type":
        expected = error.kind.types if hasattr(error.kind, "types") else None
        wanted = " or ".join(expected) if isinstance(expected, list) else _schema_types(error)
        yield ctx.finding(pointer, f"expected {wanted}, got {_describe(error.instance)}")
    else:
        message = error.message
        yield ctx.finding(pointer, message if len(message) <= 200 else message[:197] + "...")


def _step_findings(ctx: Context, error: Any) -> Iterator[Finding]:
    """A step matched none of the per-type variants: report what the variant its `uses`
    names rejects (a step that is no object, or whose `uses` is missing or unknown, has
    its finding from the step schema's own keywords or from step.unknown_type)."""
    variants, step_keys = _step_variants(ctx.kind)
    uses = error.instance.get("uses") if isinstance(error.instance, dict) else None
    if not isinstance(uses, str) or uses not in variants:
        return
    index = variants[uses]
    for sub in error.kind.context[index]:
        if type(sub.kind).__name__ == "AdditionalProperties" and \
                list(sub.instance_path) == list(error.instance_path):
            pointer = jp.from_parts(sub.instance_path)
            for name in sub.kind.unexpected:
                if (uses, name) in _REPORTED_BY_OTHER_RULES:
                    continue
                yield ctx.finding(jp.join(pointer, name),
                                  _step_field_text(ctx.kind, uses, name, step_keys), key=True)
        else:
            yield from _findings(ctx, sub)


def _step_field_text(kind: str, uses: str, name: str, step_keys: frozenset[str]) -> str:
    """What to say of a field a step of type `uses` does not take: that it belongs under
    `with:` (a field of that type's `with` one level too high), that the type does not
    take it, or the nearest field name."""
    with_fields, own = _variant_fields(kind, uses)
    if name in with_fields:
        return (f"field '{name}' belongs in the step's `with`: indent it under `with:` "
                f"(a {uses} step's `with` takes {', '.join(sorted(with_fields))})")
    if name in step_keys:
        return f"field '{name}' is not allowed on a {uses} step"
    return f"unknown field '{name}'{did_you_mean(name, own | with_fields)}"


def _allowed_at(kind: str, error: Any) -> frozenset[str]:
    """The field names the schema takes where `error` was found (its `properties`)."""
    schema = load_schema(_SCHEMA_FILES[kind])
    node: Any = schema
    for part in list(error.schema_path)[:-1]:  # up to the additionalProperties keyword
        if isinstance(node, dict) and "$ref" in node and part not in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return frozenset()
    if isinstance(node, dict) and "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return frozenset((node.get("properties") or {}) if isinstance(node, dict) else ())


@cache
def _variant_fields(kind: str, uses: str) -> tuple[frozenset[str], frozenset[str]]:
    """A step type's `with` fields and its own fields."""
    defs = load_schema(_SCHEMA_FILES[kind]).get("$defs", {})
    for ref in defs.get("step", {}).get("oneOf", []):
        variant = defs[ref["$ref"].rsplit("/", 1)[-1]]
        if variant["properties"]["uses"].get("const") == uses:
            with_ = variant["properties"].get("with") or {}
            return (frozenset(with_.get("properties") or ()),
                    frozenset(variant["properties"]))
    return frozenset(), frozenset()


# (step type, field): reported by a rule of its own, with its own code.
_REPORTED_BY_OTHER_RULES = frozenset({("decision", "output")})  # decision.output_not_allowed


@cache
def _step_variants(kind: str) -> tuple[dict[str, int], frozenset[str]]:
    """`uses` value -> its index in the step's oneOf; and every field some step type takes."""
    defs = load_schema(_SCHEMA_FILES[kind]).get("$defs", {})
    indexes: dict[str, int] = {}
    keys: set[str] = set()
    for index, ref in enumerate(defs.get("step", {}).get("oneOf", [])):
        variant = defs[ref["$ref"].rsplit("/", 1)[-1]]
        indexes[variant["properties"]["uses"]["const"]] = index
        keys.update(variant["properties"])
    return indexes, frozenset(keys)


def _schema_types(error: Any) -> str:
    text = str(error.message)
    marker = " is not of type "
    return text.split(marker, 1)[1] if marker in text else "another type"

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
    variants, step_keys = _step_variants(ctx.kind)
    keyword = list(error.schema_path)
    if kind == "AdditionalProperties" and len(keyword) == 3 and keyword[0] == "$defs" \
            and keyword[1] in variants:  # a step's own field its type does not take
        uses = variants[keyword[1]]
        for name in error.kind.unexpected:
            if (uses, name) not in _REPORTED_BY_OTHER_RULES:
                yield ctx.finding(jp.join(pointer, name),
                                  _step_field_text(ctx.kind, uses, name, step_keys), key=True)
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
    for name, variant_uses in _step_variants(kind)[0].items():
        if variant_uses == uses:
            variant = defs[name]
            with_ = variant["properties"].get("with") or {}
            return (frozenset(with_.get("properties") or ()),
                    frozenset(variant["properties"]))
    return frozenset(), frozenset()


# (step type, field): reported by a rule of its own, with its own code.
_REPORTED_BY_OTHER_RULES = frozenset({("decision", "output")})  # decision.output_not_allowed


@cache
def _step_variants(kind: str) -> tuple[dict[str, str], frozenset[str]]:
    """The per-type step schemas (`$defs` name -> its `uses`: the step's allOf of
    if-uses-then-variant), and every field some step type takes."""
    defs = load_schema(_SCHEMA_FILES[kind]).get("$defs", {})
    names: dict[str, str] = {}
    keys: set[str] = set()
    for branch in defs.get("step", {}).get("allOf", []):
        name = branch["then"]["$ref"].rsplit("/", 1)[-1]
        names[name] = defs[name]["properties"]["uses"]["const"]
        keys.update(defs[name]["properties"])
    return names, frozenset(keys)


def _schema_types(error: Any) -> str:
    text = str(error.message)
    marker = " is not of type "
    return text.split(marker, 1)[1] if marker in text else "another type"

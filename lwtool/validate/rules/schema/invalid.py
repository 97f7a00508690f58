"""A JSON Schema in the file uses something outside LWIR's schema subset.

## What it flags
In workflow input/output schemas, step output schemas and a human.input step's
`with.schema` (and a definition's): the
rejected keywords (`pattern`, `format`, `exclusiveMinimum`, `exclusiveMaximum`,
`default`, `deprecated`, `readOnly`, `writeOnly`, `patternProperties`, `if`/`then`/
`else`, `$ref`), unknown keywords, malformed keyword values, and records keyed by a
non-string schema (`propertyNames` whose type is not string).

## Why
The runtime enforces only the subset; accepting a keyword it does not enforce would
silently drop the constraint.

## Example
```yaml
output:
  schema:
    type: object
    properties: {email: {type: string, format: email}}
steps:
  - {id: fetch, uses: tool.call, with: {tool: t}}
```

## Instead
```yaml
output:
  schema:
    type: object
    properties: {email: {type: string, minLength: 3}}
steps:
  - {id: fetch, uses: tool.call, with: {tool: t}}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwtool.canonical.exact_json import EXACT, refuse
from lwtool.source import pointer as jp
from lwtool.source.finding import Finding
from lwtool.validate.context import Context
from lwtool.validate.schema_subset import Problem, subset_problems

try:
    import orjson
except ImportError:  # a base install: every schema is checked on its own
    orjson = None  # type: ignore[assignment]

CODE = "schema.invalid"
APPLIES_TO = ("Workflow", "WorkflowDefinition")


def schema_locations(ctx: Context) -> Iterator[tuple[Any, str]]:
    """(schema, pointer) of every user schema in the document."""
    value = ctx.value
    for part in ("input", "output"):
        holder = value.get(part)
        if isinstance(holder, dict) and "schema" in holder:
            yield holder["schema"], f"/{part}/schema"
    if ctx.kind != "Workflow":
        return
    for info in ctx.steps:
        output = info.step.get("output")
        if isinstance(output, dict) and "schema" in output:
            yield output["schema"], f"{info.pointer}/output/schema"
        settings = info.step.get("with")
        if info.uses == "human.input" and isinstance(settings, dict) and "schema" in settings:
            yield settings["schema"], f"{info.pointer}/with/schema"


def check(ctx: Context) -> Iterator[Finding]:
    known: dict[bytes, list[Problem]] = {}  # equal schemas (steps often repeat one)
    for schema, pointer in schema_locations(ctx):
        content = _content(schema)
        problems = known.get(content) if content is not None else None
        if problems is None:
            problems = subset_problems(schema)
            if content is not None:
                known[content] = problems
        for relative, message, on_key in problems:
            yield ctx.finding(pointer + jp.from_parts(relative), message, key=on_key)


def _content(schema: Any) -> bytes | None:
    """The schema's JSON text with sorted keys (equal schemas, equal text); None when it
    is not plain JSON (a date YAML read, a key that is not text, a lone surrogate) or
    orjson is not installed."""
    if orjson is None:
        return None
    try:
        return orjson.dumps(schema, default=refuse, option=EXACT | orjson.OPT_SORT_KEYS)
    except TypeError:
        return None

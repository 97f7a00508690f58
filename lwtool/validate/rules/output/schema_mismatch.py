"""An output mode's schema does not fit the mode.

## What it flags
`mode: object` with a schema whose `type` is not `object`; `mode: array` with a schema
whose `type` is not `array`.

## Why
The mode says what shape the step returns; a schema of another shape could never
validate.

## Example
```yaml
steps:
  - id: list
    uses: tool.call
    with: {tool: t}
    output: {mode: array, schema: {type: object}}
```

## Instead
```yaml
steps:
  - id: list
    uses: tool.call
    with: {tool: t}
    output: {mode: array, schema: {type: array, items: {type: object}}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "output.schema_mismatch"
_MODE_TYPES = {"object": "object", "array": "array"}


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        output = info.step.get("output")
        if not isinstance(output, dict):
            continue
        mode = output.get("mode")
        wanted = _MODE_TYPES.get(mode) if isinstance(mode, str) else None
        schema = output.get("schema")
        if wanted is None or not isinstance(schema, dict) or "type" not in schema:
            continue
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if wanted not in types:
            yield ctx.finding(f"{info.pointer}/output/schema/type",
                              f"mode {wanted} needs a schema of type {wanted}, got "
                              + " or ".join(str(t) for t in types))

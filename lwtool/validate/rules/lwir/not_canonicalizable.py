"""A value has no RFC 8785 canonical form, so the document cannot be hashed.

## What it flags
Integers beyond ±2**53 (I-JSON's safe range; RFC 8785 numbers are IEEE doubles).

## Why
The WorkflowVersion id is the hash of the canonical form; a value that would change
on the way there would make two different documents share one id.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: 9007199254740993}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "9007199254740993"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source import pointer as jp
from lwtool.validate.context import Context
from lwtool.validate.finding import Finding

CODE = "lwir.not_canonicalizable"
APPLIES_TO = ("Workflow", "WorkflowDefinition")
SAFE = 2**53 - 1


def check(ctx: Context) -> Iterator[Finding]:
    todo: list[tuple[object, str]] = [(ctx.value, "")]
    while todo:
        value, pointer = todo.pop()
        if isinstance(value, dict):
            todo.extend((v, jp.join(pointer, k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, f"{pointer}/{i}") for i, v in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > SAFE:
            yield ctx.finding(pointer, f"{value} is outside the exact integer range of JSON "
                              "numbers (±2**53); write it as a string")

"""A choice output lists the same value twice.

## What it flags
Repeated entries in `output.values` of `mode: choice`.

## Why
A choice is one of a set; a repeated value is a typo for another one.

## Example
```yaml
steps:
  - id: grade
    uses: tool.call
    with: {tool: t}
    output: {mode: choice, values: [low, high, low]}
```

## Instead
```yaml
steps:
  - id: grade
    uses: tool.call
    with: {tool: t}
    output: {mode: choice, values: [low, medium, high]}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "output.duplicate_choice"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        output = info.step.get("output")
        values = output.get("values") if isinstance(output, dict) else None
        if not isinstance(values, list):
            continue
        seen: set[str] = set()
        for i, value in enumerate(values):
            if isinstance(value, str) and value in seen:
                yield ctx.finding(f"{info.pointer}/output/values/{i}",
                                  f"choice '{value}' is listed twice")
            if isinstance(value, str):
                seen.add(value)

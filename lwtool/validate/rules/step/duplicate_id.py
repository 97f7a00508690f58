"""Two steps in the same scope share an id.

## What it flags
A step id used twice in the workflow's step list, or twice in one parallel body.

## Why
References, `needs`, decision targets and step paths all name steps by id; a shared
id makes each of them ambiguous.

## Example
```yaml
steps:
  - {id: fetch, uses: tool.call, with: {tool: a}}
  - {id: fetch, uses: tool.call, with: {tool: b}}
```

## Instead
```yaml
steps:
  - {id: fetch-a, uses: tool.call, with: {tool: a}}
  - {id: fetch-b, uses: tool.call, with: {tool: b}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "step.duplicate_id"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        first = ctx.in_scope(info.scope).get(info.id)
        if info.id and first is not None and first is not info:
            line = ctx.document.source_map.span(first.pointer).start.line
            yield ctx.finding(f"{info.pointer}/id", f"step id '{info.id}' is already used "
                              f"in this scope (line {line})")

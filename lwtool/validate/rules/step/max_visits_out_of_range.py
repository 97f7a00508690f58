"""`maxVisits` is outside 1..100.

## What it flags
A `maxVisits` below 1 or above 100.

## Why
`maxVisits` bounds a loop; 0 would forbid the step from running at all and a huge
bound is no bound.

## Example
```yaml
steps:
  - {id: fetch, uses: tool.call, maxVisits: 0, with: {tool: a}}
```

## Instead
```yaml
steps:
  - {id: fetch, uses: tool.call, maxVisits: 1, with: {tool: a}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "step.max_visits_out_of_range"
LOW, HIGH = 1, 100


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        value = info.step.get("maxVisits")
        if isinstance(value, int) and not isinstance(value, bool) and not LOW <= value <= HIGH:
            yield ctx.finding(f"{info.pointer}/maxVisits",
                              f"maxVisits must be an integer from {LOW} to {HIGH}, got {value}")

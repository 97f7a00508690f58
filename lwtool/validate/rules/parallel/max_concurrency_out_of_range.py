"""A parallel step's `maxConcurrency` is outside 1..maxBranches.

## What it flags
`maxConcurrency` below 1 or above the same step's `maxBranches`.

## Why
More concurrent branches than branches is meaningless, and 0 would never start one.

## Example
```yaml
steps:
  - id: each
    uses: parallel
    with: {items: "{{ input.rows }}", maxBranches: 4, maxConcurrency: 8}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```

## Instead
```yaml
steps:
  - id: each
    uses: parallel
    with: {items: "{{ input.rows }}", maxBranches: 4, maxConcurrency: 4}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "parallel.max_concurrency_out_of_range"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses != "parallel":
            continue
        value = info.with_.get("maxConcurrency")
        high = info.with_.get("maxBranches")
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        high = high if isinstance(high, int) and not isinstance(high, bool) and high >= 1 else 100
        if not 1 <= value <= high:
            yield ctx.finding(f"{info.pointer}/with/maxConcurrency",
                              f"maxConcurrency must be from 1 to maxBranches ({high}), got {value}")

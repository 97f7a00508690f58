"""A parallel step's `maxBranches` is outside 1..100, or its literal items exceed it.

## What it flags
`maxBranches` below 1 or above 100; an `items` array written in the file with more
entries than `maxBranches`.

## Why
Alpha parallel groups are for small, bounded branch sets; a run whose items exceed
`maxBranches` fails.

## Example
```yaml
steps:
  - id: each
    uses: parallel
    with: {items: "{{ input.rows }}", maxBranches: 500, maxConcurrency: 5}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```

## Instead
```yaml
steps:
  - id: each
    uses: parallel
    with: {items: "{{ input.rows }}", maxBranches: 100, maxConcurrency: 5}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "parallel.max_branches_out_of_range"
LOW, HIGH = 1, 100


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses != "parallel":
            continue
        value = info.with_.get("maxBranches")
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if not LOW <= value <= HIGH:
            yield ctx.finding(f"{info.pointer}/with/maxBranches",
                              f"maxBranches must be an integer from {LOW} to {HIGH}, got {value}")
        items = info.with_.get("items")
        if isinstance(items, list) and len(items) > value:
            yield ctx.finding(f"{info.pointer}/with/items",
                              f"{len(items)} items, more than maxBranches ({value})")

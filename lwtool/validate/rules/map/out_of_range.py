"""A map step's batch, concurrency, tolerance or reduce arity outside its range.

## What it flags
`batch.maxItems` outside 1-10,000, `maxConcurrency` outside 1-1,000, a
`toleratedFailure` that is not exactly one of `percent` (0-100) or `count` (0 or
more), and `reduce.arity` outside 2-1,000.

## Why
Each sets how the items are cut and run; a value outside its range would make no
shard, hold every worker, or tolerate nothing meaningful. An ignored tolerance is the
bug peers shipped: every field is checked, and honoured.

## Example
```yaml
steps:
  - id: all
    uses: map
    with:
      items: "{{ input.tickets }}"
      workflow: sha256:0000000000000000000000000000000000000000000000000000000000000000
      batch: {maxItems: 0}
      toleratedFailure: {percent: 2, count: 5}
```

## Instead
```yaml
steps:
  - id: all
    uses: map
    with:
      items: "{{ input.tickets }}"
      workflow: sha256:0000000000000000000000000000000000000000000000000000000000000000
      batch: {maxItems: 50}
      toleratedFailure: {percent: 2}
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "map.out_of_range"
RANGES = {("batch", "maxItems"): (1, 10_000), ("maxConcurrency",): (1, 1_000),
          ("reduce", "arity"): (2, 1_000)}


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses != "map":
            continue
        settings = info.with_
        for path, (low, high) in RANGES.items():
            value: Any = settings
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value is not None and not _within(value, low, high):
                yield ctx.finding(f"{info.pointer}/with/{'/'.join(path)}",
                                  f"{'.'.join(path)} must be an integer from {low:,} to "
                                  f"{high:,}, not {value!r}")
        tolerance = settings.get("toleratedFailure")
        if isinstance(tolerance, dict):
            yield from _tolerance(ctx, f"{info.pointer}/with/toleratedFailure", tolerance)


def _tolerance(ctx: Context, pointer: str, tolerance: dict[str, Any]) -> Iterator[Finding]:
    given = [k for k in ("percent", "count") if k in tolerance]
    if len(given) != 1:
        yield ctx.finding(pointer, "toleratedFailure takes exactly one of percent (0 to 100) "
                          "or count (0 or more)")
        return
    value = tolerance[given[0]]
    if given[0] == "percent" and (isinstance(value, bool) or not isinstance(
            value, (int, float)) or not 0 <= value <= 100):
        yield ctx.finding(f"{pointer}/percent", f"percent must be from 0 to 100, not {value!r}")
    if given[0] == "count" and not _within(value, 0, None):
        yield ctx.finding(f"{pointer}/count", f"count must be an integer 0 or more, not "
                          f"{value!r}")


def _within(value: Any, low: int, high: int | None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and \
        (high is None or value <= high)

"""A field the format reserves but the runtime does not implement yet.

## What it flags
A step-level `cache` (no step cache). (`permissions.secrets`, `permissions.network`
and escalated repair, `onFailure.repair.mode: escalate` with `repair.model`, reserved
by the spec's alpha, are honoured by lwtool.)

## Why
Accepting them would promise behaviour that does not happen.

## Example
```yaml
steps:
  - id: write
    uses: ai.generate
    with: {model: gpt-4o-mini, prompt: hi}
    cache: {ttl: 3600}
```

## Instead
```yaml
steps:
  - id: write
    uses: ai.generate
    with: {model: gpt-4o-mini, prompt: hi}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "schema.unimplemented_field"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if "cache" in info.step:
            yield ctx.finding(f"{info.pointer}/cache", "step cache is not implemented yet",
                              key=True)

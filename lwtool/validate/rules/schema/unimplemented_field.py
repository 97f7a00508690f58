"""A field the format reserves but the runtime does not implement yet.

## What it flags
`onFailure.repair.mode: escalate` and `onFailure.repair.model` (no escalated repair),
and a step-level `cache` (no step cache). (`permissions.secrets` and
`permissions.network`, reserved by the spec's alpha, are honoured by lwtool.)

## Why
Accepting them would promise behaviour that does not happen.

## Example
```yaml
steps:
  - id: write
    uses: ai.generate
    with: {model: gpt-4o-mini, prompt: hi}
    onFailure: {repair: {mode: escalate}}
```

## Instead
```yaml
steps:
  - id: write
    uses: ai.generate
    with: {model: gpt-4o-mini, prompt: hi}
    onFailure: {repair: {mode: self, maxAttempts: 2}}
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
        on_failure = info.step.get("onFailure")
        repair = on_failure.get("repair") if isinstance(on_failure, dict) else None
        if not isinstance(repair, dict):
            continue
        if repair.get("mode") == "escalate":
            yield ctx.finding(f"{info.pointer}/onFailure/repair/mode", "repair mode 'escalate' "
                              "is not implemented yet; use 'self', or run the step on the "
                              "stronger model")
        if "model" in repair:
            yield ctx.finding(f"{info.pointer}/onFailure/repair/model", "repair.model is not "
                              "implemented yet; repair runs on the step's own model", key=True)

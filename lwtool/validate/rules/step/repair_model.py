"""An escalated repair without the slot it runs on, or a repair slot that no pass uses.

## What it flags
`onFailure.repair.mode: escalate` without `repair.model` (the stronger slot the repair
passes run on), and `repair.model` with `mode: self` (self repair runs on the step's own
model, so the slot would be ignored).

## Why
An escalation with nowhere to go would repair nothing; a slot that is never called
promises a repair model the run never uses.

## Example
```yaml
permissions: {models: [fast, strong]}
steps:
  - id: write
    uses: ai.generate
    with: {model: fast, prompt: hi}
    output: {mode: object, schema: {type: object}}
    onFailure: {repair: {mode: escalate}}
```

## Instead
```yaml
permissions: {models: [fast, strong]}
steps:
  - id: write
    uses: ai.generate
    with: {model: fast, prompt: hi}
    output: {mode: object, schema: {type: object}}
    onFailure: {repair: {mode: escalate, model: strong, maxAttempts: 2}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "step.repair_model"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        repair = info.repair
        pointer = f"{info.pointer}/onFailure/repair"
        if repair.get("mode") == "escalate" and not isinstance(repair.get("model"), str):
            yield ctx.finding(f"{pointer}/mode", "repair mode 'escalate' needs repair.model: "
                              "the (stronger) model slot its repair passes run on")
        elif repair.get("mode") == "self" and "model" in repair:
            yield ctx.finding(f"{pointer}/model", "repair.model is for mode 'escalate'; a "
                              "self repair runs on the step's own model", key=True)

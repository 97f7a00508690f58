"""Two model slots of a WorkflowDefinition have the same id.

## What it flags
In a definition's `models`, two slots whose ids (given, or derived from the model name
as the part after the last '/') are equal.

## Why
Steps name a slot by id; two slots with one id make it ambiguous which model runs.

## Example
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner: {model: gpt-5}
models: [{model: openai/gpt-4o-mini}, {model: azure/gpt-4o-mini}]
```

## Instead
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner: {model: gpt-5}
models: [{model: openai/gpt-4o-mini}, {id: gpt-4o-mini-azure, model: azure/gpt-4o-mini}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.authoring.snapshot import slot_id
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "lwir.duplicate_model_slot"
APPLIES_TO = ("WorkflowDefinition",)


def check(ctx: Context) -> Iterator[Finding]:
    models = ctx.value.get("models")
    if not isinstance(models, list):
        return
    seen: dict[str, int] = {}
    for i, slot in enumerate(models):
        if not isinstance(slot, dict):
            continue
        sid = slot_id(slot)
        if sid in seen:
            yield ctx.finding(f"/models/{i}", f"model slot id '{sid}' is already used by "
                              f"models[{seen[sid]}]; give one of them an explicit id")
        else:
            seen[sid] = i

"""A step uses a model slot that `permissions.models` does not list.

## What it flags
An `ai.generate` or `ai.agent` step's `with.model`, its escalated repair's `repair.model`, or a
code.run fixer's `model`, that is not one of the slot ids in `permissions.models`.

## Why
`permissions.models` is what the WorkflowVersion lock permits; the runtime refuses any
other slot at step lease.

## Example
```yaml
permissions: {models: [gpt-4o-mini]}
steps:
  - {id: write, uses: ai.generate, with: {model: gpt-5, prompt: hi}}
```

## Instead
```yaml
permissions: {models: [gpt-4o-mini, gpt-5]}
steps:
  - {id: write, uses: ai.generate, with: {model: gpt-5, prompt: hi}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import MODEL_STEPS, Context, did_you_mean

CODE = "permissions.unknown_model"


def check(ctx: Context) -> Iterator[Finding]:
    allowed = ctx.permitted("models")
    for info in ctx.steps:
        uses_model: list[tuple[object, str]] = []
        if info.uses in MODEL_STEPS:
            uses_model.append((info.with_.get("model"), f"{info.pointer}/with/model"))
        on_failure = info.step.get("onFailure")
        fixer = on_failure.get("fixer") if isinstance(on_failure, dict) else None
        if isinstance(fixer, dict):
            uses_model.append((fixer.get("model"), f"{info.pointer}/onFailure/fixer/model"))
        if info.repair.get("mode") == "escalate":
            uses_model.append((info.repair.get("model"),
                               f"{info.pointer}/onFailure/repair/model"))
        for model, pointer in uses_model:
            if isinstance(model, str) and model not in allowed:
                listed_text = ", ".join(sorted(allowed)) or "none"
                yield ctx.finding(pointer, f"model slot '{model}' is not in permissions.models "
                                  f"(listed: {listed_text}){did_you_mean(model, allowed)}")

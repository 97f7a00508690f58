"""A step's `uses` names no step type.

## What it flags
`uses` values other than `ai.generate`, `tool.call`, `code.run`, `decision`,
`parallel` and lwtool's `ai.agent`, `human.input`, `workflow.invoke` and `map`.

## Why
The interpreter dispatches on `uses`; an unknown type has nothing to run it.

## Example
```yaml
steps:
  - id: fetch
    uses: http.get
    with: {tool: fetch}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: fetch}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import STEP_TYPES, Context, did_you_mean

CODE = "step.unknown_type"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        uses = info.step.get("uses")
        if isinstance(uses, str) and uses not in STEP_TYPES:
            near = did_you_mean(uses, STEP_TYPES)
            known = ", ".join(STEP_TYPES)
            yield ctx.finding(f"{info.pointer}/uses", f"unknown step type '{uses}'{near} "
                              f"(step types: {known})" if near else
                              f"unknown step type '{uses}'; expected one of {known}")

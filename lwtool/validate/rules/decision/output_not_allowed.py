"""A decision step declares an `output`.

## What it flags
`output` on a `uses: decision` step.

## Why
A decision only routes: its recorded result is `{chosen: <target>}` and it never
contributes output to a fan-in or to the run.

## Example
```yaml
steps:
  - id: route
    uses: decision
    output: {mode: text}
    with: {cases: [], default: end}
```

## Instead
```yaml
steps:
  - id: route
    uses: decision
    with: {cases: [], default: end}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "decision.output_not_allowed"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses == "decision" and "output" in info.step:
            yield ctx.finding(f"{info.pointer}/output", "a decision step has no output; "
                              "it records only the target it chose", key=True)

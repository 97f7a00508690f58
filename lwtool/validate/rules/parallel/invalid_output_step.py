"""`fanIn.outputStep` names no step of the parallel body, or names a decision.

## What it flags
An `outputStep` that is not the id of a non-decision step in the same parallel body.

## Why
The named step's `lastOutput` is each branch's contribution to the fan-in; decisions
have no output.

## Example
```yaml
steps:
  - id: each
    uses: parallel
    with:
      items: "{{ input.rows }}"
      maxBranches: 10
      maxConcurrency: 2
      fanIn: {order: input, output: array, outputStep: missing}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```

## Instead
```yaml
steps:
  - id: each
    uses: parallel
    with:
      items: "{{ input.rows }}"
      maxBranches: 10
      maxConcurrency: 2
      fanIn: {order: input, output: array, outputStep: work}
    steps: [{id: work, uses: tool.call, with: {tool: t}}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "parallel.invalid_output_step"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        fan_in = info.with_.get("fanIn") if info.uses == "parallel" else None
        name = fan_in.get("outputStep") if isinstance(fan_in, dict) else None
        if not isinstance(name, str):
            continue
        pointer = f"{info.pointer}/with/fanIn/outputStep"
        target = ctx.in_scope(info.pointer).get(name)
        if target is None:
            yield ctx.finding(pointer, f"outputStep '{name}' is not a step of this parallel body")
        elif target.uses == "decision":
            yield ctx.finding(pointer, f"outputStep '{name}' is a decision step, which has "
                              "no output")

"""A workflow reaches itself through `workflow.invoke` steps.

## What it flags
A `workflow.invoke` whose child is the invoking file itself, or invokes it again
through its own children; the message names the chain of files.

## Why
Each run would start a child that starts the same workflow again, without end, and a
workflow whose version covers its children's could never be locked.

## Example
```yaml
permissions: {tools: [], models: []}
steps:
  - id: again
    uses: workflow.invoke
    with:
      workflow: ./invoke.cycle.yaml
```

## Instead
```yaml
permissions: {tools: [improve, checkText, publish], models: []}
steps:
  - id: again
    uses: workflow.invoke
    with:
      workflow: ./examples/refine-loop.lwir.yaml
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.children import locked_of
from lwtool.validate.context import Context
from lwtool.validate.invokes import ChildProblem

CODE = "invoke.cycle"


def check(ctx: Context) -> Iterator[Finding]:
    found = locked_of(ctx)
    if isinstance(found, ChildProblem) and found.cycle:
        yield ctx.finding(found.pointer, found.message)

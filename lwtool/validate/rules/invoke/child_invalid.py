"""A `workflow.invoke` names a child workflow file that is missing or not valid LWIR.

## What it flags
A `workflow.invoke` step whose `with.workflow` names a file (relative to the invoking
file) that does not exist, does not load, is not LWIR (`kind: Workflow`), or has errors
of its own (the first is quoted, with its line and column in the child).

## Why
A child file is locked into the invoking workflow's version: the parent cannot be
locked, hashed or run without it.

## Example
```yaml
permissions: {tools: [], models: []}
steps:
  - id: score
    uses: workflow.invoke
    with:
      workflow: ./no-such-child.lwir.yaml
      input: {text: "{{ input.text }}"}
```

## Instead
```yaml
permissions: {tools: [improve, checkText, publish], models: []}
steps:
  - id: score
    uses: workflow.invoke
    with:
      workflow: ./examples/refine-loop.lwir.yaml
      input: {text: "{{ input.text }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.children import locked_of
from lwtool.validate.context import Context
from lwtool.validate.invokes import ChildProblem

CODE = "invoke.child_invalid"


def check(ctx: Context) -> Iterator[Finding]:
    found = locked_of(ctx)
    if isinstance(found, ChildProblem) and not found.cycle:
        yield ctx.finding(found.pointer, found.message)

"""An expression starts from a name that is not a root.

## What it flags
Names other than `input`, `steps`, `item`, `workflow` and `step` at the start of an
expression path.

## Why
Those are the only values an expression can read.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ inputs.id }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ input.id }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.expr.ast import ROOTS
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.unknown_root"


def check(ctx: Context) -> Iterator[Finding]:
    for site in ctx.templates:
        for ref in site.references():
            if ref.root not in ROOTS:
                yield ctx.site_finding(site, ref.start, ref.end,
                                       f"unknown name '{ref.root}'; an expression starts from "
                                       + ", ".join(ROOTS))

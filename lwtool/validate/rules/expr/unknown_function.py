"""An expression calls a function the language does not have.

## What it flags
A call of any name outside the documented pure functions (`sha256`, `coalesce`,
`length`, `lower`, `upper`, `trim`, `join`, `keys`, `contains`, `json`, `string`).

## Why
Expressions are pure and bounded; there is no way to define or import functions.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ md5(input.id) }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ sha256(input.id) }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.expr import ast
from lwtool.expr.functions import FUNCTIONS
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.unknown_function"


def check(ctx: Context) -> Iterator[Finding]:
    for site, part, node in ctx.expression_nodes():
        if isinstance(node, ast.Call) and node.name not in FUNCTIONS:
            yield ctx.site_finding(site, part.offset + node.start, part.offset + node.name_end,
                                   f"unknown function '{node.name}'; available: "
                                   + ", ".join(FUNCTIONS))

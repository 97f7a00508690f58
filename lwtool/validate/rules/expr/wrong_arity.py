"""A function is called with the wrong number of arguments.

## What it flags
A call of a known function with fewer or more arguments than it takes.

## Why
The call would fail at run time.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ sha256(input.a, input.b) }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ sha256(input.a) }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.expr import ast
from lwtool.expr.functions import FUNCTIONS
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.wrong_arity"


def check(ctx: Context) -> Iterator[Finding]:
    for site, part, node in ctx.expression_nodes():
        if not isinstance(node, ast.Call) or node.name not in FUNCTIONS:
            continue
        function = FUNCTIONS[node.name]
        count, high = len(node.args), function.max_args
        if count < function.min_args or (high is not None and count > high):
            wanted = (f"{function.min_args}" if high == function.min_args else
                      f"{function.min_args} or more" if high is None else
                      f"{function.min_args} to {high}")
            yield ctx.site_finding(site, part.offset + node.start, part.offset + node.end,
                                   f"{node.name}() takes {wanted} argument(s), got {count}")

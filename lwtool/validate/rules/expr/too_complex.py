"""An expression is too long or nests too deeply.

## What it flags
Expressions over 4,000 characters, brackets nested over 32 levels, more than 32 `not`.

## Why
Expressions are meant to be small and bounded; the limits keep validation and
evaluation fast whatever the input.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {x: "{{ ((((((((((((((((((((((((((((((((((input.a)))))))))))))))))))))))))))))))))) }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {x: "{{ input.a }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.too_complex"


def check(ctx: Context) -> Iterator[Finding]:
    yield from ctx.template_errors(CODE)

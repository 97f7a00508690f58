"""An expression inside `{{ }}` does not parse.

## What it flags
Syntax errors in the expression language (see grammar/expr.lark), an unclosed `{{`,
and operators the language does not have (`=`, `&&`, `+`, ...).

## Why
The expression could not be evaluated at run time either.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ input.id = 1 }}"}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "{{ input.id == 1 }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.syntax"


def check(ctx: Context) -> Iterator[Finding]:
    yield from ctx.template_errors(CODE)

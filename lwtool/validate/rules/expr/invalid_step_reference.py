"""A `steps` reference does not name a step and an accessor.

## What it flags
`steps` alone, `steps.X` alone, or `steps.X.<name>` where name is not `output`,
`lastOutput` or `allVisits`.

## Why
A step's value is read through one of the three accessors.

## Example
```yaml
steps:
  - {id: fetch, uses: tool.call, with: {tool: t}}
  - id: use
    uses: tool.call
    needs: [fetch]
    with: {tool: t}
    input: {x: "{{ steps.fetch.result }}"}
```

## Instead
```yaml
steps:
  - {id: fetch, uses: tool.call, with: {tool: t}}
  - id: use
    uses: tool.call
    needs: [fetch]
    with: {tool: t}
    input: {x: "{{ steps.fetch.output }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.expr.ast import STEP_ACCESSORS
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "expr.invalid_step_reference"


def check(ctx: Context) -> Iterator[Finding]:
    wanted = ", ".join(STEP_ACCESSORS)
    for site in ctx.templates:
        for ref in site.references():
            if ref.root != "steps":
                continue
            if ref.step is None:
                message = "steps must be followed by a step id and an accessor " \
                          f"(steps.<id>.output); accessors: {wanted}"
            elif ref.accessor is None:
                message = f"steps.{ref.step} needs an accessor: {wanted}"
            elif ref.accessor not in STEP_ACCESSORS:
                message = f"'{ref.accessor}' is not a step accessor; use {wanted}"
            else:
                continue
            yield ctx.site_finding(site, ref.start, ref.end, message)

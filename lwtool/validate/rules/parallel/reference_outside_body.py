"""A step in a parallel body reads a step outside that body.

## What it flags
`{{ steps.X... }}` inside a parallel body where X is not a step of the same body.

## Why
Each branch is its own scope; its steps cannot need steps outside it. Pass what a
branch needs through the items (`{{ item }}`) or read the workflow input.

## Example
```yaml
steps:
  - {id: job, uses: tool.call, with: {tool: t}}
  - id: each
    uses: parallel
    needs: [job]
    with: {items: "{{ input.rows }}", maxBranches: 10, maxConcurrency: 2}
    steps:
      - id: work
        uses: tool.call
        with: {tool: t}
        input: {job: "{{ steps.job.output }}"}
```

## Instead
```yaml
steps:
  - {id: job, uses: tool.call, with: {tool: t}}
  - id: each
    uses: parallel
    needs: [job]
    with: {items: "{{ steps.job.output.rows }}", maxBranches: 10, maxConcurrency: 2}
    steps:
      - id: work
        uses: tool.call
        with: {tool: t}
        input: {row: "{{ item }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "parallel.reference_outside_body"


def check(ctx: Context) -> Iterator[Finding]:
    every_id = {info.id for info in ctx.steps}
    for site, owner, ref in ctx.step_references():
        if not owner.scope or ref.step in ctx.in_scope(owner.scope) or ref.step not in every_id:
            continue
        parent = owner.parent.id if owner.parent else "?"
        yield ctx.site_finding(site, ref.start, ref.end,
                               f"reads steps.{ref.step} from inside parallel step "
                               f"'{parent}'; a branch can only read steps of its own "
                               "body (pass data in through items)")

"""A decision routes to a step outside its scope, or to no step at all.

## What it flags
A `to` or `default` that is neither `end` nor the id of a step in the decision's own
scope (the workflow's step list, or the parallel body the decision stands in).

## Why
A decision can only move execution within its scope; `end` ends that scope.

## Example
```yaml
steps:
  - {id: check, uses: tool.call, with: {tool: t}}
  - id: route
    uses: decision
    needs: [check]
    with:
      cases: [{when: "{{ steps.check.output.ok }}", to: finish}]
      default: end
```

## Instead
```yaml
steps:
  - {id: check, uses: tool.call, with: {tool: t}}
  - id: route
    uses: decision
    needs: [check]
    with:
      cases: [{when: "{{ steps.check.output.ok }}", to: end}]
      default: end
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context
from lwtool.validate.flow import decision_targets

CODE = "decision.target_out_of_scope"
END = "end"


def check(ctx: Context) -> Iterator[Finding]:
    every_id = {info.id for info in ctx.steps}
    for info in ctx.steps:
        scope = ctx.in_scope(info.scope)
        for target, pointer in decision_targets(info):
            if target == END or target in scope:
                continue
            if target in every_id:
                where = "its parallel body" if info.scope else "the top-level step list"
                yield ctx.finding(pointer, f"routes to '{target}', which is outside {where}; "
                                  "a decision can only route within its scope or to 'end'")
            else:
                yield ctx.finding(pointer, f"routes to '{target}', but there is no step "
                                  f"'{target}' (use 'end' to finish the scope)")

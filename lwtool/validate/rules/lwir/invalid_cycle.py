"""A cycle of steps has no decision step, or a step on it cannot be revisited.

## What it flags
Tarjan's strongly connected components over needs edges plus decision transition
edges, per scope. A cycle is allowed only when it holds a decision step (its way out)
and every other step on it has `maxVisits` of at least 2. Decision steps need no
`maxVisits` (the spec's worked example gives its `route` none): a decision runs once
per round, and the loop is bounded by the other steps' `maxVisits`. A cycle made of
decisions alone has nothing to bound it and is flagged too.

## Why
A cycle without a decision never ends; a step with `maxVisits: 1` on a loop would fail
the run the second time round.

## Example
```yaml
steps:
  - {id: a, uses: tool.call, needs: [b], with: {tool: t}}
  - {id: b, uses: tool.call, needs: [a], with: {tool: t}}
```

## Instead
```yaml
steps:
  - {id: a, uses: tool.call, maxVisits: 3, with: {tool: t}}
  - id: again
    uses: decision
    needs: [a]
    with:
      cases: [{when: "{{ steps.a.lastOutput.done }}", to: end}]
      default: a
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context
from lwtool.validate.flow import flow_edges
from lwtool.validate.graph import cycle_path, is_cycle, strongly_connected

CODE = "lwir.invalid_cycle"


def check(ctx: Context) -> Iterator[Finding]:
    for scope, steps in ctx.scopes.items():
        edges = flow_edges(ctx, scope)
        for component in strongly_connected(list(steps), edges):
            if not is_cycle(component, edges):
                continue
            members = [steps[sid] for sid in component]
            first = min(members, key=lambda s: ctx.document.source_map.span(s.pointer))
            path = " -> ".join(cycle_path(first.id, set(component), edges))
            if not any(m.uses == "decision" for m in members):
                yield ctx.finding(f"{first.pointer}/id", f"cycle {path} has no decision step, "
                                  "so nothing can end it")
                continue
            if all(m.uses == "decision" for m in members):
                yield ctx.finding(f"{first.pointer}/id", f"cycle {path} holds only decision "
                                  "steps, so no step's maxVisits bounds it")
                continue
            low = sorted((m for m in members if m.max_visits < 2 and m.uses != "decision"),
                         key=lambda s: ctx.document.source_map.span(s.pointer))
            if low:
                names = ", ".join(f"'{m.id}'" for m in low)
                yield ctx.finding(f"{first.pointer}/id", f"cycle {path} has steps with "
                                  f"maxVisits below 2: {names}")

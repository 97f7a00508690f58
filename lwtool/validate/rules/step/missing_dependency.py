"""A step reads or needs a step that does not exist, or reads one it does not need.

## What it flags
A `needs` entry that names no step in the same scope; a `{{ steps.X... }}` reference
to a step that exists nowhere; a reference to a step X of the same scope that is not
in `needs`. References through `lastOutput`/`allVisits` are exempt when X can reach the
reading step through the execution flow (needs plus decision edges): that is the
back-edge pattern of a loop.

## Why
A step runs when its needs have completed; reading a step that is not needed may read
it before it ran.

## Example
```yaml
steps:
  - {id: fetch, uses: tool.call, with: {tool: a}}
  - id: score
    uses: tool.call
    with: {tool: b}
    input: {data: "{{ steps.fetch.output }}"}
```

## Instead
```yaml
steps:
  - {id: fetch, uses: tool.call, with: {tool: a}}
  - id: score
    uses: tool.call
    needs: [fetch]
    with: {tool: b}
    input: {data: "{{ steps.fetch.output }}"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context
from lwtool.validate.flow import flow_edges
from lwtool.validate.graph import Reachability

CODE = "step.missing_dependency"
_LOOP_ACCESSORS = ("lastOutput", "allVisits")


def check(ctx: Context) -> Iterator[Finding]:
    all_ids = {info.id for info in ctx.steps}
    for info in ctx.steps:
        scope = ctx.in_scope(info.scope)
        needs = info.step.get("needs")
        if isinstance(needs, list):
            for i, need in enumerate(needs):
                if isinstance(need, str) and need not in scope:
                    where = "in this parallel body" if info.scope else "in this workflow"
                    yield ctx.finding(f"{info.pointer}/needs/{i}",
                                      f"needs '{need}', but there is no step '{need}' {where}")
    reach: dict[str, Reachability[str]] = {}
    for site, owner, ref in ctx.step_references():
        assert ref.step is not None
        if ref.step not in all_ids:
            yield ctx.site_finding(site, ref.start, ref.end,
                                   f"reads steps.{ref.step}, but there is no step "
                                   f"'{ref.step}'")
            continue
        scope = ctx.in_scope(owner.scope)
        if ref.step not in scope or ref.step in owner.needs:
            continue  # outside the scope: parallel.reference_outside_body says so
        if ref.accessor in _LOOP_ACCESSORS:
            if owner.scope not in reach:
                reach[owner.scope] = Reachability(scope, flow_edges(ctx, owner.scope))
            if reach[owner.scope].reaches(ref.step, owner.id):
                continue
        yield ctx.site_finding(site, ref.start, ref.end,
                               f"reads steps.{ref.step} but '{ref.step}' is not in the "
                               f"needs of step '{owner.id}'")

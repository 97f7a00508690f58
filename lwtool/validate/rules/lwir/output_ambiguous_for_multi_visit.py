"""`steps.X.output` reads a step that may run more than once.

## What it flags
An `output` reference to a step with `maxVisits` above 1.

## Why
Which visit's output? Say `lastOutput` (the most recent) or `allVisits` (every visit,
in order).

## Example
```yaml
steps:
  - {id: a, uses: tool.call, maxVisits: 3, with: {tool: t}}
  - id: again
    uses: decision
    needs: [a]
    maxVisits: 3
    with:
      cases: [{when: "{{ steps.a.output.done }}", to: end}]
      default: a
```

## Instead
```yaml
steps:
  - {id: a, uses: tool.call, maxVisits: 3, with: {tool: t}}
  - id: again
    uses: decision
    needs: [a]
    maxVisits: 3
    with:
      cases: [{when: "{{ steps.a.lastOutput.done }}", to: end}]
      default: a
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "lwir.output_ambiguous_for_multi_visit"


def check(ctx: Context) -> Iterator[Finding]:
    for site, owner, ref in ctx.step_references():
        if ref.accessor != "output" or ref.step is None:
            continue
        target = ctx.in_scope(owner.scope).get(ref.step)
        if target is not None and target.max_visits > 1:
            yield ctx.site_finding(site, ref.start, ref.end,
                                   f"step '{ref.step}' may run up to {target.max_visits} "
                                   "times; read steps." + ref.step + ".lastOutput or "
                                   ".allVisits")

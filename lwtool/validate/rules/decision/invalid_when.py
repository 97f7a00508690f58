"""A decision case's `when` is not a single `{{ expression }}`.

## What it flags
A `when` with no `{{ }}` at all, or with text around or between expressions.

## Why
`when` is tested for truth; text around an expression makes it a non-empty string,
which is always true.

## Example
```yaml
steps:
  - {id: check, uses: tool.call, with: {tool: t}}
  - id: route
    uses: decision
    needs: [check]
    with:
      cases: [{when: "passed: {{ steps.check.output.ok }}", to: end}]
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

CODE = "decision.invalid_when"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        cases = info.with_.get("cases") if info.uses == "decision" else None
        if not isinstance(cases, list):
            continue
        for i, case in enumerate(cases):
            when = case.get("when") if isinstance(case, dict) else None
            if not isinstance(when, str):
                continue
            pointer = f"{info.pointer}/with/cases/{i}/when"
            site = ctx.site_at(pointer)
            if site is None:
                yield ctx.finding(pointer, "when must be a {{ expression }}, not plain text")
                continue
            if site.template is not None and not site.template.is_single:
                yield ctx.finding(pointer, "when must be exactly one {{ expression }} with "
                                  "no text around it (text is always true)")

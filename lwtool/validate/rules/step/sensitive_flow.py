"""A step that is not sensitive reads the output of one that is.

## What it flags
A `{{ steps.X... }}` in the `input` or `with` of a step without `sensitive: true`,
where X is marked `sensitive: true` (a warning; decisions excepted: they record only
the branch they chose).

## Why
A sensitive step's values are kept out of the event log, but the step that reads one
puts it into its own input, prompt or output, which the log keeps inline.

## Example
```yaml
steps:
  - {id: fetch, uses: tool.call, sensitive: true, with: {tool: getCredential}}
  - id: use
    uses: tool.call
    needs: [fetch]
    with: {tool: login, args: {token: "{{ steps.fetch.output }}"}}
```

## Instead
```yaml
steps:
  - {id: fetch, uses: tool.call, sensitive: true, with: {tool: getCredential}}
  - id: use
    uses: tool.call
    needs: [fetch]
    sensitive: true
    with: {tool: login, args: {token: "{{ steps.fetch.output }}"}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding, Severity
from lwtool.validate.context import Context

CODE = "step.sensitive_flow"


def check(ctx: Context) -> Iterator[Finding]:
    sensitive = {info.id for info in ctx.steps if info.step.get("sensitive") is True}
    if not sensitive:
        return
    for site, owner, ref in ctx.step_references():
        if ref.step in sensitive and owner.step.get("sensitive") is not True \
                and owner.uses != "decision":
            yield ctx.finding(site.pointer, f"step '{owner.id}' puts the output of "
                              f"sensitive step '{ref.step}' into its own input, "
                              "which the event log keeps inline; mark it `sensitive: true` too",
                              severity=Severity.WARNING)

"""A definition's fixed plan makes its outer-loop settings do nothing.

## What it flags
A WorkflowDefinition with a fixed `planner.plan` that also sets
`planner.maxOuterCycles` or `planner.supervise` (a warning: the file is valid).

## Why
A fixed plan runs as written: nothing is planned, so there are no plan-run-supervise
cycles to bound or judge, and those settings are ignored. Either the plan was meant to
be drafted (and the fixed plan is a leftover), or the settings are.

## Example
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner:
  plan: review.lwir.yaml
  maxOuterCycles: 3
  supervise: {model: judge}
```

## Instead
```yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner:
  plan: review.lwir.yaml
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding, Severity
from lwtool.validate.context import Context

CODE = "definition.ignored_with_fixed_plan"
APPLIES_TO = ("WorkflowDefinition",)


def check(ctx: Context) -> Iterator[Finding]:
    planner = ctx.value.get("planner") if isinstance(ctx.value, dict) else None
    if not isinstance(planner, dict) or not planner.get("plan"):
        return
    for key in ("maxOuterCycles", "supervise"):
        if key in planner:
            yield ctx.finding(f"/planner/{key}", f"planner.{key} is ignored: the fixed "
                              f"planner.plan '{planner['plan']}' runs as written (nothing "
                              "is planned, so there is no outer loop)", key=True,
                              severity=Severity.WARNING)

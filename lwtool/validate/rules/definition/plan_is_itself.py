"""A definition's fixed plan names the definition file itself.

## What it flags
A WorkflowDefinition whose `planner.plan` resolves (relative to the definition's own
folder) to the definition file.

## Why
`planner.plan` must name an LWIR file (`kind: Workflow`) that runs as written. A
definition that names itself would be planned from itself forever; `lwtool run`
refuses it, and this finding says so before anything runs.

## Example
```yaml
# this file is definition.plan_is_itself.yaml
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: review
planner:
  plan: ./definition.plan_is_itself.yaml
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

import os
from collections.abc import Iterator
from pathlib import Path

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "definition.plan_is_itself"
APPLIES_TO = ("WorkflowDefinition",)


def check(ctx: Context) -> Iterator[Finding]:
    planner = ctx.value.get("planner") if isinstance(ctx.value, dict) else None
    plan = planner.get("plan") if isinstance(planner, dict) else None
    if not isinstance(plan, str) or not plan:
        return
    here = Path(ctx.path)
    target = here.parent / plan
    if os.path.normpath(target) == os.path.normpath(here) or _same_file(target, here):
        yield ctx.finding("/planner/plan", f"planner.plan '{plan}' is this definition "
                          "itself; it must name an LWIR file (kind: Workflow)")


def _same_file(a: Path, b: Path) -> bool:
    """The same file under two spellings (a symlink, `../dir/`); False when either
    cannot be looked at (a file not on disk, e.g. an editor buffer)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False

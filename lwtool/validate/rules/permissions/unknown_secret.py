"""A step is granted a secret that `permissions.secrets` does not list.

## What it flags
A name in a step's `secrets` that is not one of `permissions.secrets` (a workflow
without `permissions.secrets` may grant no secret).

## Why
`permissions.secrets` is everything the WorkflowVersion may read; a step's grant is a
part of it. The run resolves the listed names before its first step, and a step gets
only its own grant, so a name outside the list could never be given.

## Example
```yaml
permissions: {tools: [fileIssue], secrets: []}
steps:
  - {id: file, uses: tool.call, secrets: [GITHUB_TOKEN], with: {tool: fileIssue}}
```

## Instead
```yaml
permissions: {tools: [fileIssue], secrets: [GITHUB_TOKEN]}
steps:
  - {id: file, uses: tool.call, secrets: [GITHUB_TOKEN], with: {tool: fileIssue}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context, did_you_mean

CODE = "permissions.unknown_secret"


def check(ctx: Context) -> Iterator[Finding]:
    allowed = ctx.permitted("secrets")
    listed_text = ", ".join(sorted(allowed)) or "none"
    for info in ctx.steps:
        granted = info.step.get("secrets")
        if not isinstance(granted, list):
            continue
        for index, name in enumerate(granted):
            if isinstance(name, str) and name not in allowed:
                yield ctx.finding(f"{info.pointer}/secrets/{index}", f"secret '{name}' is not "
                                  f"in permissions.secrets (listed: {listed_text})"
                                  f"{did_you_mean(name, allowed)}")

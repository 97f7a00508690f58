"""A tool.call step calls a tool that `permissions.tools` does not list.

## What it flags
A `tool.call` step whose `with.tool`, or an `ai.agent` step one of whose `with.tools`,
is not one of the names in `permissions.tools` (a workflow without
`permissions.tools` permits no tool).

## Why
`permissions.tools` is what the WorkflowVersion permits; the runtime refuses any other
tool (`capability_drift`) before calling it, so the run would fail at that step.

## Example
```yaml
permissions: {tools: [fetch], models: []}
steps:
  - {id: send, uses: tool.call, with: {tool: sendEmail}}
```

## Instead
```yaml
permissions: {tools: [fetch, sendEmail], models: []}
steps:
  - {id: send, uses: tool.call, with: {tool: sendEmail}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context, did_you_mean, named_tools

CODE = "permissions.unknown_tool"


def check(ctx: Context) -> Iterator[Finding]:
    allowed = ctx.permitted("tools")
    for info in ctx.steps:
        for where, tool in named_tools(info.step):
            if isinstance(tool, str) and tool not in allowed:
                listed_text = ", ".join(sorted(allowed)) or "none"
                yield ctx.finding(info.pointer + where, f"tool '{tool}' is not in "
                                  f"permissions.tools (listed: {listed_text})"
                                  f"{did_you_mean(tool, allowed)}")

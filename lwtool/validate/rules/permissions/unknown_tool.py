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
from lwtool.validate.context import Context, did_you_mean

CODE = "permissions.unknown_tool"


def check(ctx: Context) -> Iterator[Finding]:
    allowed = ctx.permitted("tools")
    for info in ctx.steps:
        named: list[tuple[object, str]] = []
        if info.uses == "tool.call":
            named.append((info.with_.get("tool"), f"{info.pointer}/with/tool"))
        offered = info.with_.get("tools") if info.uses == "ai.agent" else None
        for index, name in enumerate(offered if isinstance(offered, list) else []):
            named.append((name, f"{info.pointer}/with/tools/{index}"))
        for tool, pointer in named:
            if isinstance(tool, str) and tool not in allowed:
                listed_text = ", ".join(sorted(allowed)) or "none"
                yield ctx.finding(pointer, f"tool '{tool}' is not in permissions.tools "
                                  f"(listed: {listed_text}){did_you_mean(tool, allowed)}")

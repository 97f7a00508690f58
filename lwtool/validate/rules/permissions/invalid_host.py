"""A `permissions.network` entry that is not a host pattern.

## What it flags
An entry that is not `host`, `host:port`, `*.domain[:port]`, an IPv4 address or a
bracketed IPv6 address: a URL, a path, a bare `*`, a wildcard over a top-level name
(`*.com`), a wildcard inside a name, a port outside 1-65535.

## Why
The list is what code.run's sandbox and the HTTP MCP client allow; an entry that means
"everything" or nothing at all would make the firewall say something it does not do.

## Example
```yaml
permissions: {tools: [t], network: ["https://api.github.com/", "*"]}
steps:
  - {id: a, uses: tool.call, with: {tool: t}}
```

## Instead
```yaml
permissions: {tools: [t], network: ["api.github.com:443", "*.githubusercontent.com"]}
steps:
  - {id: a, uses: tool.call, with: {tool: t}}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.capability.hosts import BadPattern, HostPattern
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "permissions.invalid_host"


def check(ctx: Context) -> Iterator[Finding]:
    permissions = ctx.value.get("permissions") if isinstance(ctx.value, dict) else None
    listed = permissions.get("network") if isinstance(permissions, dict) else None
    if not isinstance(listed, list):
        return
    for index, entry in enumerate(listed):
        if not isinstance(entry, str):
            continue  # the schema says so
        try:
            HostPattern.parse(entry)
        except BadPattern as exc:
            yield ctx.finding(f"/permissions/network/{index}", str(exc))

"""A code.run step allows network access but the workflow lists no host.

## What it flags
`sandbox: {network: allow}` on a code.run step of a workflow whose
`permissions.network` is empty or missing (a warning).

## Why
code.run may connect only to the hosts `permissions.network` lists; `network: allow`
alone no longer means every host, so this step can reach none.

## Example
```yaml
permissions: {network: []}
steps:
  - id: fetch
    uses: code.run
    with:
      entrypoint: main.ts
      files: {main.ts: {content: "export async function run() { return 1; }"}}
      sandbox: {network: allow}
```

## Instead
```yaml
permissions: {network: ["api.example.com:443"]}
steps:
  - id: fetch
    uses: code.run
    with:
      entrypoint: main.ts
      files: {main.ts: {content: "export async function run() { return 1; }"}}
      sandbox: {network: allow}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding, Severity
from lwtool.validate.context import Context

CODE = "code.network_without_hosts"


def check(ctx: Context) -> Iterator[Finding]:
    if ctx.permitted("network"):
        return
    for info in ctx.steps:
        sandbox = info.with_.get("sandbox") if info.uses == "code.run" else None
        if isinstance(sandbox, dict) and sandbox.get("network") == "allow":
            yield ctx.finding(f"{info.pointer}/with/sandbox/network", "network: allow "
                              "reaches no host: permissions.network is empty; list the "
                              "hosts this code may connect to there",
                              severity=Severity.WARNING)

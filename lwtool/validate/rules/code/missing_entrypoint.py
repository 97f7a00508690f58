"""A code.run step's entrypoint is not one of its files.

## What it flags
A `code.run` step whose `with.entrypoint` names no key of `with.files`.

## Why
The sandbox loads the entrypoint from the step's own pinned files and nothing else;
an entrypoint that is not among them can never load, so the step would always fail.

## Example
```yaml
steps:
  - id: score
    uses: code.run
    with:
      entrypoint: score.ts
      files:
        main.ts: {content: "export async function run() { return 1; }"}
      sandbox: {network: deny, env: deny, fs: deny}
```

## Instead
```yaml
steps:
  - id: score
    uses: code.run
    with:
      entrypoint: main.ts
      files:
        main.ts: {content: "export async function run() { return 1; }"}
      sandbox: {network: deny, env: deny, fs: deny}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "code.missing_entrypoint"


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        if info.uses != "code.run":
            continue
        entrypoint, files = info.with_.get("entrypoint"), info.with_.get("files")
        if isinstance(entrypoint, str) and isinstance(files, dict) and entrypoint not in files:
            names = ", ".join(sorted(str(name) for name in files)) or "none"
            yield ctx.finding(f"{info.pointer}/with/entrypoint", f"entrypoint '{entrypoint}' "
                              f"is not one of the step's files ({names})")

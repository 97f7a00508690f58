"""A code.run file's `sha256` pin does not match its content.

## What it flags
A file of a `code.run` step whose `sha256` is well formed (`sha256:` and 64 hex
digits; anything else is `lwir.invalid_field`) but is not the SHA-256 of the file's
`content` as UTF-8.

## Why
The pin is what a reviewer approved. A content edit without a new pin is either a
mistake or tampering, and the sandbox refuses to load source that breaks its pin.

## Example
```yaml
steps:
  - id: score
    uses: code.run
    with:
      entrypoint: main.ts
      files:
        main.ts:
          content: "export async function run() { return 2; }"
          sha256: "sha256:0000000000000000000000000000000000000000000000000000000000000000"
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
        main.ts:
          content: "export async function run() { return 2; }"
          sha256: "sha256:6ceeb87b1b8287fd8ae8f0e14507f161f9221d17707fd627fef046f7019842ee"
      sandbox: {network: deny, env: deny, fs: deny}
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lwtool.canonical.digest import text_pin
from lwtool.source.finding import Finding
from lwtool.source.pointer import escape
from lwtool.validate.context import Context

CODE = "code.pin_mismatch"

_PIN = re.compile(r"sha256:[0-9a-f]{64}")


def check(ctx: Context) -> Iterator[Finding]:
    for info in ctx.steps:
        files = info.with_.get("files") if info.uses == "code.run" else None
        if not isinstance(files, dict):
            continue
        for name, file in files.items():
            if not isinstance(file, dict):
                continue
            pin, content = file.get("sha256"), file.get("content")
            if not (isinstance(pin, str) and _PIN.fullmatch(pin) and isinstance(content, str)):
                continue
            actual = text_pin(content)
            if pin != actual:
                pointer = f"{info.pointer}/with/files/{escape(str(name))}/sha256"
                yield ctx.finding(pointer, f"file '{name}' is pinned to {pin[:19]}… but its "
                                  f"content hashes to {actual}")

"""A value has no RFC 8785 canonical form, so the document cannot be hashed.

## What it flags
Integers beyond ±2**53 (I-JSON's safe range; RFC 8785 numbers are IEEE doubles).

## Why
The WorkflowVersion id is the hash of the canonical form; a value that would change
on the way there would make two different documents share one id.

## Example
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: 9007199254740993}
```

## Instead
```yaml
steps:
  - id: fetch
    uses: tool.call
    with: {tool: t}
    input: {id: "9007199254740993"}
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lwtool.source import pointer as jp
from lwtool.validate.context import Context
from lwtool.validate.finding import Finding

CODE = "lwir.not_canonicalizable"
APPLIES_TO = ("Workflow", "WorkflowDefinition")
SAFE = 2**53 - 1


# An integer beyond 2**53 is written with at least 16 decimal, 14 hex or 18 octal
# digits (YAML allows `_` between them): a text with no such run has none, and the
# walk over every value is skipped.
_LONG_NUMBER = re.compile(r"[0-9a-fA-F_]{14,}")

Link = tuple["Link | None", str | int] | None


def _pointer(link: Link) -> str:
    parts: list[str | int] = []
    while link is not None:
        link, key = link
        parts.append(key)
    return jp.from_parts(reversed(parts))


def check(ctx: Context) -> Iterator[Finding]:
    if not _LONG_NUMBER.search(ctx.document.text) and ctx.document.text:
        return
    todo: list[tuple[object, Link]] = [(ctx.value, None)]
    while todo:
        value, link = todo.pop()
        if isinstance(value, dict):
            todo.extend((v, (link, k)) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, (link, i)) for i, v in enumerate(value))
        elif type(value) is int and abs(value) > SAFE:  # `type is`: true/false are not ints
            yield ctx.finding(_pointer(link), f"{value} is outside the exact integer range of "
                              "JSON numbers (±2**53); write it as a string")

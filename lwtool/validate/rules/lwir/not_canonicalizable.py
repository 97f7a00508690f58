"""A value has no RFC 8785 canonical form, so the document cannot be hashed.

## What it flags
Integers beyond ±2**53 (I-JSON's safe range; RFC 8785 numbers are IEEE doubles), and
strings or keys holding a lone UTF-16 surrogate (a `\\ud800` escape with no pair: not
Unicode text, so it has no UTF-8 form to hash).

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

from collections.abc import Iterator

from lwtool.canonical.plain_json import has_lone_surrogate, may_hold_lone_surrogate
from lwtool.source import pointer as jp
from lwtool.source.finding import Finding
from lwtool.validate.context import Context

CODE = "lwir.not_canonicalizable"
APPLIES_TO = ("Workflow", "WorkflowDefinition")
SAFE = 2**53 - 1


# An integer beyond 2**53 is written with at least 16 decimal, 14 hex or 18 octal
# digits (YAML allows `_` between them): a text with no run of 14 such characters has
# none, and the walk over every value is skipped. Found by mapping each byte to `1`
# (such a character) or a space and searching for fourteen `1`s: a regular
# expression tried at every offset took ten times as long.
_DIGIT_OR_NOT = bytes(0x31 if chr(b) in "0123456789abcdefABCDEF_" else 0x20
                      for b in range(256))
_RUN = b"1" * 14


def _long_number_run(text: str) -> bool:
    return _RUN in text.encode("utf-8", "surrogatepass").translate(_DIGIT_OR_NOT)

Link = tuple["Link | None", str | int] | None


def _pointer(link: Link) -> str:
    parts: list[str | int] = []
    while link is not None:
        link, key = link
        parts.append(key)
    return jp.from_parts(reversed(parts))


def check(ctx: Context) -> Iterator[Finding]:
    text = ctx.document.text
    numbers = _long_number_run(text) or not text
    surrogates = may_hold_lone_surrogate(text) or not text
    if not numbers and not surrogates:
        return
    todo: list[tuple[object, Link]] = [(ctx.value, None)]
    while todo:
        value, link = todo.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                if surrogates and isinstance(k, str) and has_lone_surrogate(k):
                    yield ctx.finding(_pointer((link, k)), "this key holds a lone UTF-16 "
                                      "surrogate (an unpaired \\uD800-\\uDFFF escape), "
                                      "which is not Unicode text")
                todo.append((v, (link, k)))
        elif isinstance(value, list):
            todo.extend((v, (link, i)) for i, v in enumerate(value))
        elif numbers and type(value) is int and abs(value) > SAFE:  # `type is`: not bools
            yield ctx.finding(_pointer(link), f"{value} is outside the exact integer range of "
                              "JSON numbers (±2**53); write it as a string")
        elif surrogates and isinstance(value, str) and has_lone_surrogate(value):
            yield ctx.finding(_pointer(link), "this string holds a lone UTF-16 surrogate (an "
                              "unpaired \\uD800-\\uDFFF escape), which is not Unicode text")

"""Compact JSON for what the runtime stores (event payloads, step outputs, tool
results): orjson where it writes and reads exactly what the standard library would,
the standard library for the rest.

Writing: orjson (no whitespace, UTF-8, no ASCII escaping). A value orjson refuses (an
integer beyond 64 bits, a lone surrogate, a non-string key) is written by `json`, and
`dumps_text` marks such text with one leading space (still JSON). Values here are
plain JSON already (lwtool.canonical.plain_json): no NaN, whose forms differ.

Reading: `loads` is `json.loads` (exact for any JSON). `loads_marked` reads text that
`dumps_text` wrote: orjson, which reads everything orjson wrote exactly, unless the
text carries the mark (then `json`). orjson would read an integer beyond 64 bits as a
float, so text of any other writer must go through `loads`.

Content hashes of values (short_hash, RFC 8785) do not use this module: their bytes
must stay what earlier logs recorded.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_stdlib_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
STDLIB_MARK = " "


def dumps_bytes(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _stdlib_encode(value).encode("utf-8", "surrogatepass")


def dumps_text(value: Any) -> str:
    """`value` as compact JSON text; what orjson could not write starts with a space."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return STDLIB_MARK + str(_stdlib_encode(value))


def loads(data: str | bytes) -> Any:
    """Any JSON document's value, integers exact."""
    return json.loads(data)


def loads_marked(text: str) -> Any:
    """The value of text `dumps_text` wrote."""
    if not text.startswith(STDLIB_MARK):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # not what dumps_text wrote (an edit): json says what is wrong
    return json.loads(text)

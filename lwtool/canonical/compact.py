"""Compact JSON for what the runtime stores (event payloads, step outputs, tool
results): orjson where it writes and reads exactly what the standard library would,
the standard library for the rest.

Writing: orjson (no whitespace, UTF-8, no ASCII escaping); a value orjson refuses (an
integer beyond 64 bits, a lone surrogate, a non-string key) goes through `json`. Values
here are plain JSON already (lwtool.canonical.plain_json): no NaN, whose forms differ.
Reading: orjson, except for text with an integer of 19 or more digits (orjson reads
those as floats: the stored value must come back exactly) or anything orjson refuses
(NaN, a lone surrogate escape), which `json` reads as it always did.

Content hashes of values (short_hash, RFC 8785) do not use this module: their bytes
must stay what earlier logs recorded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONG_INTEGER_BYTES = re.compile(rb"[0-9]{19}")
_LONG_INTEGER_TEXT = re.compile(r"[0-9]{19}")
_stdlib_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps_bytes(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return _stdlib_encode(value).encode("utf-8", "surrogatepass")


def dumps_text(value: Any) -> str:
    """`value` as compact JSON text."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:
        return str(_stdlib_encode(value))


def loads(data: str | bytes) -> Any:
    """A JSON document's value, integers exact."""
    long_integer = _LONG_INTEGER_TEXT if isinstance(data, str) else _LONG_INTEGER_BYTES
    if not long_integer.search(data):  # type: ignore[arg-type]
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)

"""RFC 8785 canonical JSON (the rfc8785 library does the work).

A fast path: for values made only of objects with string keys, arrays, strings,
booleans, null and integers within ±(2**53 - 1), RFC 8785's form is exactly what the C JSON
encoder writes with sorted keys, no whitespace and no ASCII escaping (the same string
escapes, lowercase `\\u00xx` for other control characters, integers as digits), as
long as no character beyond U+FFFF appears (RFC 8785 sorts keys by UTF-16 code
units, Python by code points; they differ only there). Anything else (a float, a
larger integer, a non-BMP character, a lone surrogate) goes through rfc8785. A
hypothesis test holds the two equal. orjson, where installed, writes the same bytes as
that encoder for such values, six times faster (a lone surrogate it refuses).
"""

from __future__ import annotations

import json
import re
from typing import Any

import rfc8785

from lwtool.canonical.plain_json import MAX_SAFE_INTEGER

try:
    import orjson
except ImportError:  # a base install (validate, check, lsp): the standard library alone
    orjson = None  # type: ignore[assignment]

_BEYOND_BMP = re.compile("[\U00010000-\U0010ffff]")
_FOUR_BYTE_UTF8 = re.compile(b"[\xf0-\xf4]")  # how a character beyond U+FFFF starts
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True,
                           allow_nan=False).encode


class NotCanonicalizable(ValueError):
    """The value has no RFC 8785 form (e.g. an integer beyond ±2**53, a non-string key)."""


def _plain(value: Any) -> bool:
    """Only the JSON the fast path writes exactly as RFC 8785 does."""
    todo = [value]
    while todo:
        item = todo.pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            todo.extend(item.values())
        elif kind is list:
            todo.extend(item)
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return False
        elif not (kind is str or kind is bool or item is None):
            return False
    return True


def canonical_bytes(value: Any) -> bytes:
    if _plain(value):
        fast = _fast(value)
        if fast is not None:
            return fast
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise NotCanonicalizable(str(exc) or type(exc).__name__) from None


def _fast(value: Any) -> bytes | None:
    """A `_plain` value's RFC 8785 form, or None where rfc8785 must write it (a
    character beyond U+FFFF; a lone surrogate, which it refuses with a reason)."""
    if orjson is not None:
        try:
            data: bytes = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            return None
        return data if data.isascii() or not _FOUR_BYTE_UTF8.search(data) else None
    text = _encode(value)
    if text.isascii():
        return text.encode("ascii")
    if _BEYOND_BMP.search(text):
        return None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return None


def canonical_text(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")

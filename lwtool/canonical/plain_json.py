"""What a step produces is JSON, checked at the boundary.

A tool's (or a model's) value is turned into plain JSON before any later step sees it,
so a live run and its replay (which reads the value back from the log) see the same
value: a tuple becomes a list. What has no single JSON form is refused with a message
naming where it is: non-string keys (JSON would turn `{0: …}` into `{"0": …}`, so
`x[0]` would read differently live and after a replay), bytes, sets, other objects,
NaN and infinities, strings with lone surrogates (not UTF-8), and integers beyond
±2**53 (no exact form in RFC 8785's canonical JSON).

Iterative, so a deep value cannot overflow the stack; bounded in depth like documents.
"""

from __future__ import annotations

import math
import re
from typing import Any

MAX_SAFE_INTEGER = 2**53 - 1
MAX_DEPTH = 256


# A lone surrogate comes from an escape (`\ud800`) in JSON or YAML source, or raw from
# text handed over in memory (a file's raw surrogates are not UTF-8 and never load).
_MAYBE_SURROGATE = re.compile("\\\\[uU]0{0,4}[dD][89a-fA-F]|[\ud800-\udfff]")


def may_hold_lone_surrogate(source_text: str) -> bool:
    """A cheap pre-check on a document's source: False means no value in it can hold a
    lone surrogate, so a walk over its strings can be skipped."""
    if "\\u" not in source_text and "\\U" not in source_text and source_text.isascii():
        return False  # no escape, no raw surrogate: skips the slower search
    return bool(_MAYBE_SURROGATE.search(source_text))


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds an unpaired UTF-16 surrogate (it then has no UTF-8 form)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class NotJson(ValueError):
    """The value has no JSON form; the message says where (a JSON Pointer) and why."""


def _where(pointer: str) -> str:
    return f"at {pointer}" if pointer else "at the top"


def _leaf(value: Any, pointer: str) -> Any:
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise NotJson(f"{_where(pointer)}: the integer {value} is beyond ±2**53, "
                          "which canonical JSON cannot hold exactly (send it as a string)")
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJson(f"{_where(pointer)}: {value} has no JSON form "
                          "(NaN and infinities are not JSON)")
        return float(value)
    if isinstance(value, str):
        if has_lone_surrogate(value):
            raise NotJson(f"{_where(pointer)}: the string holds a lone surrogate "
                          "(not valid UTF-8)")
        return str(value)
    raise NotJson(f"{_where(pointer)}: a {type(value).__name__} is not a JSON value "
                  "(use objects, arrays, strings, numbers, booleans and null)")


class _NotPlain(Exception):
    """The fast copy met something to convert or refuse: the full walk says what."""


def _plain_copy(value: Any, depth: int) -> Any:
    """A copy of a value made only of exact JSON types, else _NotPlain. No pointers are
    built: this is the path every well-formed tool result takes."""
    kind = type(value)
    if kind is str:
        if value.isascii() or not has_lone_surrogate(value):
            return value
    elif kind is dict:
        if depth < MAX_DEPTH:
            out = {}
            for key, child in value.items():
                if type(key) is not str or not (key.isascii() or not has_lone_surrogate(key)):
                    raise _NotPlain
                out[key] = _plain_copy(child, depth + 1)
            return out
    elif kind is list:
        if depth < MAX_DEPTH:
            return [_plain_copy(child, depth + 1) for child in value]
    elif kind is int:
        if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return value
    elif kind is float:
        if math.isfinite(value):
            return value
    elif value is None or kind is bool:
        return value
    raise _NotPlain


def to_json(value: Any) -> Any:
    """A plain-JSON copy of `value` (tuples become lists), or NotJson."""
    try:
        return _plain_copy(value, 1)
    except (_NotPlain, RecursionError):
        pass
    if not isinstance(value, (dict, list, tuple)):
        return _leaf(value, "")
    root: list[Any] = [None]
    # (source container, target container, pointer, depth)
    todo: list[tuple[Any, Any, str, int]] = []

    def place(child: Any, pointer: str, depth: int) -> Any:
        if isinstance(child, dict):
            target: Any = {}
        elif isinstance(child, (list, tuple)):
            target = []
        else:
            return _leaf(child, pointer)
        if depth > MAX_DEPTH:
            raise NotJson(f"{_where(pointer)}: nested deeper than {MAX_DEPTH} levels")
        todo.append((child, target, pointer, depth))
        return target

    root[0] = place(value, "", 1)
    while todo:
        source, target, pointer, depth = todo.pop()
        if isinstance(source, dict):
            for key, child in source.items():
                if not isinstance(key, str):
                    raise NotJson(f"{_where(pointer)}: the key {key!r} is a "
                                  f"{type(key).__name__}; JSON object keys are strings")
                _leaf(key, f"{pointer}/{key}")  # lone surrogates in keys too
                escaped = key.replace("~", "~0").replace("/", "~1")
                target[key] = place(child, f"{pointer}/{escaped}", depth + 1)
        else:
            for index, child in enumerate(source):
                target.append(place(child, f"{pointer}/{index}", depth + 1))
    return root[0]

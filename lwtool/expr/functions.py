"""The pure functions an expression may call. Each is total over JSON values or raises
EvaluationError; none reads anything but its arguments."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class EvaluationError(ValueError):
    """An expression could not be evaluated (a type mismatch, a bad argument)."""


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    min_args: int
    max_args: int | None  # None: any number
    impl: Callable[..., Any]
    doc: str


def to_text(value: Any) -> str:
    """How a value reads inside text: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False)


def _sha256(value: Any) -> str:
    return hashlib.sha256(to_text(value).encode("utf-8")).hexdigest()


def _coalesce(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _length(value: Any) -> int:
    if isinstance(value, (str, list, dict)):
        return len(value)
    raise EvaluationError(f"length() takes a string, array or object, not {type_name(value)}")


def _string_fn(name: str, op: Callable[[str], str]) -> Callable[[Any], str]:
    def apply(value: Any) -> str:
        if not isinstance(value, str):
            raise EvaluationError(f"{name}() takes a string, not {type_name(value)}")
        return op(value)

    return apply


def _join(values: Any, separator: Any = ",") -> str:
    if not isinstance(values, list) or not isinstance(separator, str):
        raise EvaluationError("join() takes an array and a string separator")
    return separator.join(to_text(v) for v in values)


def _keys(value: Any) -> list[str]:
    if not isinstance(value, dict):
        raise EvaluationError(f"keys() takes an object, not {type_name(value)}")
    return list(value)


def _contains(container: Any, needle: Any) -> bool:
    if isinstance(container, str):
        if not isinstance(needle, str):
            raise EvaluationError("contains() on a string looks for a string")
        return needle in container
    if isinstance(container, list):
        return needle in container
    if isinstance(container, dict):
        return needle in container
    raise EvaluationError(f"contains() takes a string, array or object, not {type_name(container)}")


def _json(value: Any) -> str:
    from lwtool.canonical.jcs import canonical_text

    return canonical_text(value)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


FUNCTIONS: dict[str, Function] = {
    f.name: f
    for f in (
        Function("sha256", 1, 1, _sha256,
                 "hex SHA-256 of the value's text (strings as they are, others as JSON)"),
        Function("coalesce", 1, None, _coalesce, "the first argument that is not null"),
        Function("length", 1, 1, _length, "length of a string, array or object"),
        Function("lower", 1, 1, _string_fn("lower", str.lower), "a string in lower case"),
        Function("upper", 1, 1, _string_fn("upper", str.upper), "a string in upper case"),
        Function("trim", 1, 1, _string_fn("trim", str.strip), "a string without outer spaces"),
        Function("join", 1, 2, _join, "array items as text joined by a separator (default ',')"),
        Function("keys", 1, 1, _keys, "the keys of an object, in order"),
        Function("contains", 2, 2, _contains,
                 "whether a string has a substring, an array an item, an object a key"),
        Function("json", 1, 1, _json, "the value as canonical (RFC 8785) JSON text"),
        Function("string", 1, 1, to_text, "the value as text (strings as they are, others JSON)"),
    )
}

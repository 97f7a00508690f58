"""Schemas given to the authoring API as JSON Schema dicts, Python types or pydantic
models, turned into the JSON Schema subset LWIR accepts: pydantic's `$ref`s into
`$defs` are inlined (a recursive model cannot be) and its annotations that nothing
enforces (`title`, `default`, `examples`) dropped."""

from __future__ import annotations

import copy
import inspect
from typing import Any

# pydantic's annotations that LWIR's subset does not take (nothing enforces them).
DROPPED = {"$defs", "title", "default", "examples"}
_PLAIN = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
          dict: "object"}


class SchemaNotSupported(ValueError):
    pass


def to_schema(value: Any) -> dict[str, Any] | bool:
    """A JSON Schema (dict or bool) from a dict, a bool, a plain type or a pydantic model."""
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return copy.deepcopy(value)
    if value in _PLAIN:
        return {"type": _PLAIN[value]}
    if inspect.isclass(value) and hasattr(value, "model_json_schema"):
        raw = value.model_json_schema()
        inlined = _inline(raw, raw.get("$defs", {}), ())
        assert isinstance(inlined, dict)
        return inlined
    raise SchemaNotSupported(f"cannot make a JSON Schema of {value!r}: give a dict, a "
                             "plain type (str, int, float, bool, list, dict) or a pydantic "
                             "model")


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(node, list):
        return [_inline(n, defs, seen) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.rsplit("/", 1)[1]
        if name in seen:
            raise SchemaNotSupported(f"the model {name} refers to itself; LWIR schemas "
                                     "cannot be recursive")
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _inline(merged, defs, (*seen, name))
    return {k: _inline(v, defs, seen) for k, v in node.items() if k not in DROPPED}

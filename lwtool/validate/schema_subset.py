"""LWIR's JSON Schema subset: which keywords a user schema may use, and how.

One function, `subset_problems`, used by the `schema.invalid` rule and by the runtime
before it accepts a schema from the Python API.
"""

from __future__ import annotations

from typing import Any

ACCEPTED = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "oneOf", "minLength", "maxLength", "minimum", "maximum", "minItems",
    "maxItems", "propertyNames",
})
ANNOTATIONS = frozenset({"description", "title", "examples", "$schema", "$comment"})
REJECTED = {
    "pattern": "pattern (.regex())", "format": "format (.email(), .url(), ...)",
    "exclusiveMinimum": "exclusiveMinimum (.positive(), .gt())",
    "exclusiveMaximum": "exclusiveMaximum (.lt())", "default": "default (.default())",
    "deprecated": "deprecated", "readOnly": "readOnly", "writeOnly": "writeOnly",
    "patternProperties": "patternProperties", "if": "if/then/else", "then": "if/then/else",
    "else": "if/then/else", "$ref": "$ref", "$defs": "$defs", "definitions": "definitions",
}
TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})

Problem = tuple[list[str | int], str, bool]  # (relative path, message, on the key)


def subset_problems(schema: Any) -> list[Problem]:
    """Every way `schema` leaves the subset, as paths relative to the schema."""
    problems: list[Problem] = []
    todo: list[tuple[Any, list[str | int]]] = [(schema, [])]
    while todo:
        node, path = todo.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, dict):
            problems.append((path, "a schema must be an object or true/false", False))
            continue
        for key, value in node.items():
            here = [*path, key]
            if key in REJECTED:
                problems.append((here, f"{REJECTED[key]} is not in LWIR's schema subset: the "
                                 "runtime would not enforce it", True))
            elif key not in ACCEPTED and key not in ANNOTATIONS:
                problems.append((here, f"unknown schema keyword '{key}'", True))
            else:
                problems.extend(_keyword(key, value, here, todo))
    return problems


def _keyword(key: str, value: Any, here: list[str | int],
             todo: list[tuple[Any, list[str | int]]]) -> list[Problem]:
    def bad(message: str) -> list[Problem]:
        return [(here, message, False)]

    if key == "type":
        names = value if isinstance(value, list) else [value]
        if not names or not all(isinstance(n, str) and n in TYPES for n in names):
            return bad("type must be one of " + ", ".join(sorted(TYPES)) + " (or a list)")
    elif key == "properties":
        if not isinstance(value, dict):
            return bad("properties must map names to schemas")
        todo.extend((sub, [*here, name]) for name, sub in value.items())
    elif key in ("items", "additionalProperties"):
        if not isinstance(value, (dict, bool)):
            return bad(f"{key} must be a schema (tuple-style items are not supported)")
        todo.append((value, here))
    elif key in ("anyOf", "oneOf"):
        if not isinstance(value, list) or not value:
            return bad(f"{key} must be a non-empty list of schemas")
        todo.extend((sub, [*here, i]) for i, sub in enumerate(value))
    elif key == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            return bad("required must be a list of property names")
    elif key == "enum":
        if not isinstance(value, list) or not value:
            return bad("enum must be a non-empty list")
    elif key in ("minLength", "maxLength", "minItems", "maxItems"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return bad(f"{key} must be a non-negative integer")
    elif key in ("minimum", "maximum"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return bad(f"{key} must be a number")
    elif key == "propertyNames":
        if not isinstance(value, (dict, bool)):
            return bad("propertyNames must be a schema")
        if isinstance(value, dict) and "type" in value and value["type"] != "string":
            return bad("record keys must be strings: propertyNames must have type string, "
                       "since JSON object keys are always strings")
        todo.append((value, here))
    return []

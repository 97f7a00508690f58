"""The shipped JSON Schemas explain themselves to schema-driven editors: every property
has a description, and each step type lists only its own fields."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from lwtool._resources import load_schema
from lwtool.validate.context import STEP_TYPES


def _properties(node: Any, defs: dict[str, Any], path: str = "#") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for name, value in (node.get("properties") or {}).items():
            yield f"{path}/properties/{name}", value
        for key, value in node.items():
            if key not in ("$defs", "if"):  # an `if` holds conditions, not fields
                yield from _properties(value, defs, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _properties(value, defs, f"{path}/{index}")


@pytest.mark.parametrize("name", ["lwir.schema.json", "definition.schema.json",
                                  "pipeline.schema.json"])
def test_every_property_has_a_description(name: str) -> None:
    schema = load_schema(name)
    defs = schema.get("$defs", {})
    missing = []
    for path, prop in [*_properties(schema, defs), *(
            item for key, value in defs.items()
            for item in _properties(value, defs, f"#/$defs/{key}"))]:
        target = prop
        if isinstance(prop, dict) and "$ref" in prop and "description" not in prop:
            target = defs[prop["$ref"].rsplit("/", 1)[-1]]
        if not (isinstance(target, dict) and target.get("description")):
            missing.append(path)
    assert missing == []


def test_each_step_type_has_its_own_variant() -> None:
    defs = load_schema("lwir.schema.json")["$defs"]
    # if uses is X then X's variant (not oneOf: a bad `uses` is one diagnostic in
    # schema-driven editors, the enum's, not one more per variant)
    branches = defs["step"]["allOf"]
    variants = [defs[b["then"]["$ref"].rsplit("/", 1)[-1]] for b in branches]
    assert [b["if"]["properties"]["uses"]["const"] for b in branches] == list(STEP_TYPES)
    assert [v["properties"]["uses"]["const"] for v in variants] == list(STEP_TYPES)
    assert defs["step"]["properties"]["uses"]["enum"] == list(STEP_TYPES)
    keys = {v["properties"]["uses"]["const"]: set(v["properties"]) for v in variants}
    assert "onFailure" not in keys["tool.call"] and "steps" not in keys["tool.call"]
    assert {"input", "output", "retry", "onFailure", "steps"}.isdisjoint(keys["decision"])
    assert "steps" in keys["parallel"] and "input" not in keys["parallel"]
    assert all(v["additionalProperties"] is False for v in variants)

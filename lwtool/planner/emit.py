"""LWIR as YAML a person would write: the spec's key order, block style, multi-line text
(prompts, system prompts, code) as literal blocks. Loading the YAML back gives the same
value, so the same WorkflowVersion id."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

DOCUMENT_ORDER = ("apiVersion", "kind", "id", "metadata", "description", "input", "output",
                  "models", "tools", "permissions", "planner", "worker", "memory", "steps")
STEP_ORDER = ("id", "uses", "needs", "maxVisits", "with", "input", "output", "retry",
              "timeoutMs", "onFailure", "steps")
WITH_ORDER = ("model", "tool", "system", "prompt", "args", "items", "itemKey", "maxBranches",
              "maxConcurrency", "failureMode", "fanIn", "cases", "default", "entrypoint",
              "files", "sandbox")
CHILD_ORDER = {
    "with": WITH_ORDER, "steps": STEP_ORDER,
    "metadata": ("name", "version", "description"),
    "permissions": ("tools", "models", "secrets", "network"),
    "output": ("mode", "schema", "values"), "input": ("schema",),
    "schema": ("type", "required", "properties", "items", "additionalProperties"),
    "items": ("type", "required", "properties", "items", "additionalProperties"),
}


def document_text(document: dict[str, Any], out: Path) -> str:
    """The file text for `out`: JSON for a `.json` name, else YAML (lwir_yaml)."""
    if out.suffix == ".json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return lwir_yaml(document)


def lwir_yaml(lwir: dict[str, Any]) -> str:
    """The YAML text; checked to load back to `lwir` (else literal blocks are dropped)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 100
    yaml.indent(mapping=2, sequence=4, offset=2)
    for literal in (True, False):
        out = io.StringIO()
        yaml.dump(_shape(lwir, DOCUMENT_ORDER, literal=literal), out)
        text = out.getvalue()
        if YAML(typ="safe", pure=True).load(text) == lwir:
            return text
    raise ValueError("the workflow does not round-trip through YAML")


def _shape(value: Any, order: tuple[str, ...] = (), key: str = "",
           literal: bool = True) -> Any:
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, dict):
        keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
        shaped = CommentedMap()
        for k in keys:
            child_order = CHILD_ORDER.get(k, ())
            shaped[k] = _shape(value[k], child_order, k, literal)
        return shaped
    if isinstance(value, list):
        return [_shape(v, STEP_ORDER if key == "steps" else (), "", literal) for v in value]
    if literal and isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return value

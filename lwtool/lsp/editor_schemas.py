"""The editor schemas (schemas/editor/*.schema.json): lwtool's JSON Schemas without
what makes a finding, for the schema-driven services that run beside `lwtool lsp` (VS
Code's JSON language service through the extension's jsonValidation, yaml-language-
server in Neovim): they keep the field names, descriptions, value suggestions and the
per-step-type fields for completion and hover, and report nothing, so each structural
finding is reported once, by lwtool (`lwir.invalid_field`, with its code and place).

`python -m lwtool.lsp.editor_schemas` writes them; a test keeps them current."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

NAMES = ("lwir.schema.json", "definition.schema.json", "pipeline.schema.json")
# what only constrains (a value that breaks it is a finding, which lwtool reports)
_CONSTRAINTS = {"required", "additionalProperties", "type", "minLength", "maxLength",
                "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minItems",
                "maxItems", "uniqueItems", "minProperties", "maxProperties", "pattern",
                "propertyNames", "not", "format", "dependentRequired"}


def editor_schema(schema: Any, in_condition: bool = False) -> Any:
    """`schema` with its constraints taken away: `enum`/`const` become `examples` (still
    offered as values), `oneOf`/`anyOf` an `allOf` of the loosened branches (each
    branch's fields still offered); an `if` (the condition that picks a step type's
    fields) is kept as it is."""
    if isinstance(schema, list):
        return [editor_schema(item, in_condition) for item in schema]
    if not isinstance(schema, dict) or in_condition:
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _CONSTRAINTS:
            continue
        if key == "if":
            out[key] = value
        elif key == "enum":
            out["examples"] = list(value)
        elif key == "const":
            out["examples"] = [value]
        elif key in ("oneOf", "anyOf", "allOf"):
            out.setdefault("allOf", []).extend(editor_schema(value))
        elif key in ("properties", "$defs", "definitions", "patternProperties"):
            out[key] = {name: editor_schema(child) for name, child in value.items()}
        else:
            out[key] = editor_schema(value)
    if "$id" in out:
        out["$id"] = str(out["$id"]).replace("/schemas/", "/schemas/editor/")
    return out


def main(argv: list[str]) -> int:
    from lwtool._resources import load_schema

    folder = Path(argv[0]) if argv else Path("schemas") / "editor"
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        text = json.dumps(editor_schema(load_schema(name)), indent=2, ensure_ascii=False)
        (folder / name).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Whether what a parent gives and expects fits its child's schemas (workflow.invoke):
the literal parts of an input against the child's input schema (a `{{ }}` part is
known only when the run gets there), and a declared output schema against the child's
output schema (whatever the child may return, the declared schema must accept)."""

from __future__ import annotations

from typing import Any

Problem = tuple[str, str]  # (JSON Pointer below the value, message)


def literal_problems(value: Any, schema: Any, at: str = "") -> list[Problem]:
    """Where the literal parts of `value` break `schema` (templates are skipped)."""
    if isinstance(value, str) and "{{" in value or not isinstance(schema, dict):
        return []
    if isinstance(value, dict) and _types(schema) <= {"object"} and _types(schema):
        problems: list[Problem] = []
        properties = schema.get("properties") or {}
        for name in schema.get("required") or []:
            if name not in value:
                problems.append((at, f"the child's input requires '{name}'"))
        for key, item in value.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            if key in properties:
                problems += literal_problems(item, properties[key], f"{at}/{escaped}")
            elif schema.get("additionalProperties") is False:
                problems.append((f"{at}/{escaped}", f"the child's input has no '{key}'"))
        return problems
    if _holds_template(value):
        return []
    import jsonschema_rs

    try:
        error = next(iter(jsonschema_rs.Draft202012Validator(schema).iter_errors(value)), None)
    except (ValueError, jsonschema_rs.ValidationError):
        return []
    return [] if error is None else [(at, f"the child's input schema refuses it: "
                                          f"{error.message}")]


def output_problems(declared: Any, child: Any) -> list[str]:
    """Why a step's declared output schema may refuse what the child returns."""
    if not isinstance(declared, dict) or not isinstance(child, dict):
        return []
    wanted, given = _types(declared), _types(child)
    if wanted and given and not given <= _widened(wanted):
        return [f"the child returns {' or '.join(sorted(given))}, which the declared "
                f"output ({' or '.join(sorted(wanted))}) does not accept"]
    problems = []
    child_required = set(child.get("required") or [])
    for name in declared.get("required") or []:
        if name not in child_required:
            problems.append(f"the declared output requires '{name}', which the child's "
                            "output schema does not require")
    child_properties = child.get("properties") or {}
    for name, schema in (declared.get("properties") or {}).items():
        if name in child_properties:
            problems += [f"'{name}': {p}" for p in output_problems(schema,
                                                                     child_properties[name])]
    return problems


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def _widened(types: set[str]) -> set[str]:
    return types | ({"integer"} if "number" in types else set())


def _holds_template(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_holds_template(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_template(v) for v in value)
    return False

"""Check a step's value against its output mode (and a workflow's output schema)."""

from __future__ import annotations

import json
from typing import Any

from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.record.ids import hash_bytes


class OutputInvalid(ValueError):
    """The value breaks the output contract; the message says where and how."""


# Equal schemas share a compiled validator: keyed by their content (their text with
# sorted keys, or a hash of it the caller has already: a run's schemaHash).
_BY_CONTENT: dict[bytes | str, Any] = {}

# Schemas seen, by identity: a locked version's schema objects are checked step after
# step. Each entry holds its schema, so an id is never reused while it is here.
_BY_IDENTITY: dict[int, tuple[Any, Any]] = {}


def _validator(schema: Any, content_key: str | None) -> Any:
    found = _BY_IDENTITY.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    key = content_key or hash_bytes(schema)
    validator = _BY_CONTENT.get(key)
    if validator is None:
        import jsonschema_rs

        validator = jsonschema_rs.Draft202012Validator(schema)
        if len(_BY_CONTENT) >= 256:
            _BY_CONTENT.clear()
        _BY_CONTENT[key] = validator
    if len(_BY_IDENTITY) >= 512:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[id(schema)] = (schema, validator)
    return validator


def check_schema(value: Any, schema: Any, what: str, content_key: str | None = None) -> None:
    """`content_key`: the schema's content hash when the caller has it (a run's
    schemaHash), so the schema is not serialized again to find its validator."""
    if schema is None or schema is True:
        return
    validator = _validator(schema, content_key)
    if validator.is_valid(value):
        return
    for error in validator.iter_errors(value):
        where = "/" + "/".join(str(p) for p in error.instance_path)
        raise OutputInvalid(f"{what} at {where if where != '/' else 'the top'}: {error.message}")


def check_output(value: Any, mode: dict[str, Any] | None, what: str,
                 schema_key: str | None = None) -> None:
    """A tool or code result against the step's output mode (no mode: any JSON);
    `schema_key` as check_schema's `content_key`."""
    if not mode:
        return
    kind = mode.get("mode")
    if kind == "text" and not isinstance(value, str):
        raise OutputInvalid(f"{what} must be text, got {type(value).__name__}")
    if kind == "choice" and value not in (mode.get("values") or []):
        raise OutputInvalid(f"{what} must be one of {mode.get('values')}, got {value!r}")
    if kind in ("object", "array", "json"):
        check_schema(value, mode.get("schema"), what, schema_key)


def checked_step_output(run: Any, step: dict[str, Any], value: Any, what: str,
                        path: str) -> Any:
    """`value` checked against `step`'s output mode (its schema validated once per run,
    by its hash); StepFailure step_schema_error naming `what` otherwise."""
    from lwtool.record.errors import StepFailure

    mode = step.get("output")
    schema = mode.get("schema") if isinstance(mode, dict) else None
    try:
        check_output(value, mode, what,
                     run.config_hash(schema) if isinstance(schema, dict) else None)
    except OutputInvalid as exc:
        raise StepFailure("step_schema_error", str(exc), path) from None
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_model_text(text: str, mode: dict[str, Any] | None) -> Any:
    """A model's reply text -> the step value for its output mode (then checked)."""
    kind = (mode or {}).get("mode", "text")
    if kind == "text":
        return text
    if kind == "choice":
        value = text.strip().strip('"').strip()
        check_output(value, mode, "the reply")
        return value
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("\n") + 1:] if "\n" in body else body
    try:
        value = to_json(json.loads(body, parse_constant=_no_constant))
    except NotJson as exc:
        raise OutputInvalid(f"the reply is not plain JSON {exc}") from None
    except ValueError as exc:
        raise OutputInvalid(f"the reply is not JSON ({exc})") from None
    check_output(value, mode, "the reply")
    return value

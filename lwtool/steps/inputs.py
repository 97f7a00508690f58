"""Resolving a step's input and `with` values (shared by the step types)."""

from __future__ import annotations

from typing import Any

from lwtool.expr.evaluate import render
from lwtool.expr.functions import EvaluationError
from lwtool.expr.parser import ExprSyntaxError
from lwtool.expr.template import parse_template
from lwtool.record.errors import StepFailure


class _Unresolved(Exception):
    """Where inside a value an expression failed (keys from the innermost out)."""

    def __init__(self, error: Exception) -> None:
        self.error = error
        self.keys: list[str | int] = []


def resolve(value: Any, expression_scope: dict[str, Any], path: str, where: str) -> Any:
    """Render every `{{ }}` inside a JSON value. A failure names where it happened
    (`where` and the keys below it), worked out only then."""
    try:
        return _resolve(value, expression_scope)
    except _Unresolved as failed:
        at = where + "".join(f"[{k}]" if type(k) is int else f".{k}"
                             for k in reversed(failed.keys))
        raise StepFailure("step_failed", f"{at}: {failed.error}", path) from None


def _resolve(value: Any, expression_scope: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if "{{" not in value:
            return value
        try:
            return render(parse_template(value), expression_scope)
        except (EvaluationError, ExprSyntaxError) as exc:
            raise _Unresolved(exc) from None
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            try:
                out[key] = _resolve(item, expression_scope)
            except _Unresolved as failed:
                failed.keys.append(key)
                raise
        return out
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_resolve(item, expression_scope))
            except _Unresolved as failed:
                failed.keys.append(index)
                raise
        return items
    return value


def step_input(scope: Any, step: dict[str, Any], expression_scope: dict[str, Any],
               path: str) -> Any:
    """The step's `input`, else `with.args`, else the workflow input (the current item
    inside a parallel body)."""
    if "input" in step:
        return resolve(step["input"], expression_scope, path, "input")
    with_ = step.get("with") or {}
    if "args" in with_:
        return resolve(with_["args"], expression_scope, path, "with.args")
    return scope.item if scope.has_item else scope.run.run_input

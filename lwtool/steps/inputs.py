"""Resolving a step's input and `with` values (shared by the step types)."""

from __future__ import annotations

from typing import Any

from lwtool.expr.evaluate import render
from lwtool.expr.functions import EvaluationError
from lwtool.expr.parser import ExprSyntaxError
from lwtool.expr.template import has_template, parse_template
from lwtool.record.errors import StepFailure


def resolve(value: Any, expression_scope: dict[str, Any], path: str, where: str) -> Any:
    """Render every `{{ }}` inside a JSON value. A failure names where in the value it
    is (`where` and the keys below it), written only when one happens."""
    try:
        return _resolved(value, expression_scope)
    except _Failed as failed:
        raise StepFailure("step_failed", f"{where}{failed.where}: {failed.cause}",
                          path) from None


class _Failed(Exception):
    def __init__(self, cause: Exception) -> None:
        self.cause, self.where = cause, ""


def _resolved(value: Any, expression_scope: dict[str, Any]) -> Any:
    if isinstance(value, str):
        if not has_template(value):
            return value
        try:
            return render(parse_template(value), expression_scope)
        except (EvaluationError, ExprSyntaxError) as exc:
            raise _Failed(exc) from None
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            try:
                out[key] = _resolved(item, expression_scope)
            except _Failed as failed:
                failed.where = f".{key}{failed.where}"
                raise
        return out
    if isinstance(value, list):
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_resolved(item, expression_scope))
            except _Failed as failed:
                failed.where = f"[{index}]{failed.where}"
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

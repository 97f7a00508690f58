"""Resolving a step's input and `with` values (shared by the step types)."""

from __future__ import annotations

from typing import Any

from lwtool.expr.evaluate import render
from lwtool.expr.functions import EvaluationError
from lwtool.expr.parser import ExprSyntaxError
from lwtool.expr.template import has_template, parse_template
from lwtool.record.errors import StepFailure


def resolve(value: Any, expression_scope: dict[str, Any], path: str, where: str) -> Any:
    """Render every `{{ }}` inside a JSON value."""
    if isinstance(value, str):
        if not has_template(value):
            return value
        try:
            return render(parse_template(value), expression_scope)
        except (EvaluationError, ExprSyntaxError) as exc:
            raise StepFailure("step_failed", f"{where}: {exc}", path) from None
    if isinstance(value, dict):
        return {k: resolve(v, expression_scope, path, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, expression_scope, path, f"{where}[{i}]") for i, v in enumerate(value)]
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

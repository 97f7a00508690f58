"""decision: the first case whose `when` is truthy picks the target, else `default`."""

from __future__ import annotations

from typing import Any

from lwtool.expr.evaluate import truthy
from lwtool.steps.inputs import resolve
from lwtool.world.base import NewEvent


def resolve_input(scope: Any, step: dict[str, Any], expression_scope: dict[str, Any],
                  path: str) -> Any:
    return None


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any]) -> tuple[Any, list[NewEvent]]:
    with_ = step.get("with") or {}
    for i, case in enumerate(with_.get("cases") or []):
        if truthy(resolve(case.get("when"), expression_scope, path, f"with.cases[{i}].when")):
            return case.get("to"), []
    return with_.get("default"), []

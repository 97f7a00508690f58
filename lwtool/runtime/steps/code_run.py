"""code.run: not executed yet. The sandboxed runner (deno, enforcing the step's sandbox
policy) is its own issue; until then the step fails with a clear message instead of
running code in the host interpreter."""

from __future__ import annotations

from typing import Any

from lwtool.runtime.errors import StepFailure
from lwtool.runtime.steps.inputs import step_input
from lwtool.world.base import NewEvent

resolve_input = step_input


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any]) -> tuple[Any, list[NewEvent]]:
    raise StepFailure("runtime_config_error", "code.run steps cannot run yet: the sandboxed "
                      "code runner is not part of this release (nothing was executed)", path)

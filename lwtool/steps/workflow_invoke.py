"""workflow.invoke: run another workflow as a child run; the step's output is the
child's output.

`with: {workflow, input}`: `workflow` is, in the locked LWIR, the child's
WorkflowVersion id (a file named there was locked into the parent's version,
lwtool.validate.invokes); `input` (a template; default: the workflow input, or the item
inside a parallel body) is the child run's input. The child run's id is derived from
this run's id and the step's path (lwtool.record.ids.child_run_id), so a replay after a
kill at any point finds the child it started and resumes it (a finished child answers
from its log): one child run per invoke, whatever was killed when. The scheduler gives
the power to start and await it (`run.children`, lwtool.runtime.children); this module
never starts a run itself.

A child that fails fails the step with the child's cause; one that waits for a person
makes this run wait with it."""

from __future__ import annotations

from typing import Any

from lwtool.record.errors import StepFailure
from lwtool.steps.inputs import resolve
from lwtool.steps.outputs import checked_step_output
from lwtool.world.base import NewEvent


def resolve_input(scope: Any, step: dict[str, Any], expression_scope: dict[str, Any],
                  path: str) -> Any:
    settings = step.get("with") or {}
    if "input" in settings:
        return resolve(settings["input"], expression_scope, path, "with.input")
    return scope.item if scope.has_item else scope.run.run_input


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any]) -> tuple[Any, list[NewEvent]]:
    run = scope.run
    version_id = str((step.get("with") or {}).get("workflow", ""))
    if run.children is None:
        raise StepFailure("runtime_config_error", "this run cannot start child runs (its "
                          "scheduler gives it no way to)", path)
    output = await run.children.invoke(version_id, value, path)
    return checked_step_output(run, step, output, "the child run's output", path), []

"""The step executors, below the roles that run them (lwtool.harness.workflow) and the
scheduler (lwtool.runtime): each module has `resolve_input(scope, step, expr_scope,
path)` and `execute(scope, step, path, step_input, expr_scope) -> (output, call
events)` (ai.generate and ai.agent also take the worker's system prompt). `parallel` is
coordinated by the scheduler (lwtool/runtime/parallel.py), not dispatched here."""

from __future__ import annotations

from types import ModuleType

from lwtool.steps import (
    ai_agent,
    ai_generate,
    code_run,
    decision,
    map_step,
    tool_call,
    workflow_invoke,
)

STEP_KINDS: dict[str, ModuleType] = {
    "tool.call": tool_call,
    "ai.generate": ai_generate,
    "ai.agent": ai_agent,
    "code.run": code_run,
    "decision": decision,
    "workflow.invoke": workflow_invoke,
    "map": map_step,
}

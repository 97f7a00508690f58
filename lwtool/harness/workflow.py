"""The default workflow harness: worker steps dispatched by type, as the spec says.

execute_step: ai.generate (one model call, no tools), ai.agent (lwtool's: the agent
loop over the step's tools, lwtool.steps.ai_agent), tool.call (one named tool,
called directly), code.run (the step's source in the Deno sandbox, lwtool.coderun; a
failed attempt with `onFailure.fixer` is handed to a fix_step session) and decision
(direct execution). A custom harness usually subclasses this one and overrides one
method (`execute_code_run`, say) or `run`. `code_timeout` (seconds) is the run's
default wall-clock limit of a code.run execution (default 30; a step's
`sandbox.timeoutMs` wins).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from lwtool.harness.contract import (
    ExecuteStepTask,
    FixStepTask,
    HarnessContext,
    HarnessResult,
    HarnessTask,
    OrchestrateTask,
    PlanTask,
)
from lwtool.record.errors import StepFailure

DEFAULT_HARNESS_ID = "lwtool/workflow-harness@1"


_EXECUTE = {"ai.generate": "execute_ai_generate", "ai.agent": "execute_ai_agent",
            "tool.call": "execute_tool_call",
            "code.run": "execute_code_run", "decision": "execute_decision"}


class WorkflowHarness:
    harness_id = DEFAULT_HARNESS_ID

    def __init__(self, code_timeout: float | None = None) -> None:
        if code_timeout is not None and not code_timeout > 0:
            raise ValueError(f"the code timeout must be more than 0 seconds, not {code_timeout}")
        self.code_timeout = code_timeout

    async def run(self, task: HarnessTask, ctx: HarnessContext) -> HarnessResult:
        if isinstance(task, FixStepTask):
            return await self.fix_step(task, ctx)
        if isinstance(task, ExecuteStepTask):
            uses = task.step.get("uses")
            name = _EXECUTE.get(str(uses))
            if name is None:
                raise StepFailure("runtime_config_error", f"the workflow harness does not "
                                  f"execute '{uses}' steps", task.step_path)
            result: HarnessResult = await getattr(self, name)(task, ctx)
            return result
        if isinstance(task, OrchestrateTask):
            return await self.orchestrate(task, ctx)
        return await self.plan(task, ctx)

    async def orchestrate(self, task: OrchestrateTask, ctx: HarnessContext) -> HarnessResult:
        """The built-in orchestrator: ctx.model in an agent loop over ctx.tools (the
        pipeline's plan_workflow/run_workflow/start_workflow), recorded under ctx.path."""
        from lwtool.calls.agent_loop import run_agent

        messages = ([{"role": "system", "content": ctx.system}] if ctx.system else []) + [
            {"role": "user", "content": _request_text(task.request)}]
        result = await run_agent(ctx.recorder, ctx.path or "session", ctx.model, messages,
                                 ctx.tools)
        return HarnessResult("orchestrate", result.text)

    async def plan(self, task: PlanTask, ctx: HarnessContext) -> HarnessResult:
        """The built-in planner's draft in one model call: the request (and any
        priorFindings) in, an LWIR document (JSON) out, checked by the caller."""
        from lwtool.calls.models import ModelCallFailed, call_model

        messages = ([{"role": "system", "content": ctx.system}] if ctx.system else []) + [
            {"role": "user", "content": _request_text(task.request) + "\n\nReply with only "
             "the LWIR workflow as one JSON object."}]
        mode = {"mode": "object", "schema": {"type": "object"}}
        try:
            reply = await call_model(ctx.model, messages, mode, messages[-1]["content"])
        except ModelCallFailed as exc:
            raise StepFailure("step_failed", str(exc)) from None
        try:
            draft = json.loads(reply.text)
        except ValueError:
            draft = reply.text  # the caller's check says what is wrong with it
        return HarnessResult("plan", draft)

    async def execute_ai_generate(self, task: ExecuteStepTask,
                                  ctx: HarnessContext) -> HarnessResult:
        from lwtool.steps import ai_generate

        return await _builtin(ai_generate, task, ctx, ctx.system)

    async def execute_ai_agent(self, task: ExecuteStepTask,
                               ctx: HarnessContext) -> HarnessResult:
        from lwtool.steps import ai_agent

        return await _builtin(ai_agent, task, ctx, ctx.system)

    async def execute_tool_call(self, task: ExecuteStepTask, ctx: HarnessContext) -> HarnessResult:
        from lwtool.steps import tool_call

        return await _builtin(tool_call, task, ctx)

    async def execute_code_run(self, task: ExecuteStepTask, ctx: HarnessContext) -> HarnessResult:
        from lwtool.steps import code_run

        try:
            output, events = await code_run.execute(ctx.scope, task.step, task.step_path,
                                                    task.step_input, task.expression_scope,
                                                    self.code_timeout)
        except code_run.CodeRunFailed as failed:
            if not (task.step.get("onFailure") or {}).get("fixer"):
                raise
            if ctx.workspace is None:  # the runtime leaves it to the harness (the fixer's)
                from lwtool.harness.workspace import StepWorkspace

                ctx = dataclasses.replace(ctx, workspace=StepWorkspace.of_run(ctx.recorder,
                                                                              task.step_path))
            fixed = await self.run(FixStepTask(task.step, task.step_path, task.step_input,
                                               failed.envelope), ctx)
            return HarnessResult("execute_step", fixed.output, fixed.events)
        return HarnessResult("execute_step", output, list(events))

    async def fix_step(self, task: FixStepTask, ctx: HarnessContext) -> HarnessResult:
        from lwtool.harness.fixer import fix_step

        return await fix_step(task, ctx, self.code_timeout)

    async def execute_decision(self, task: ExecuteStepTask, ctx: HarnessContext) -> HarnessResult:
        from lwtool.steps import decision

        return await _builtin(decision, task, ctx)


def _request_text(request: Any) -> str:
    return request if isinstance(request, str) else json.dumps(request, ensure_ascii=False,
                                                               indent=1, default=str)


async def _builtin(module: Any, task: ExecuteStepTask, ctx: HarnessContext,
                   *more: Any) -> HarnessResult:
    """A step module's execute (`more`: the model steps' worker system prompt)."""
    output, events = await module.execute(ctx.scope, task.step, task.step_path,
                                          task.step_input, task.expression_scope, *more)
    return HarnessResult("execute_step", output, list(events))


# The step types this harness hands straight to their module (`_builtin`): the runtime
# calls those modules itself when the run's harness is exactly this class.
DIRECT_KINDS = frozenset({"tool.call", "decision", "workflow.invoke", "map"})


class HarnessNotLoadable(Exception):
    pass


def load_harness(spec: str | None) -> Any:
    """`module:attr` (or a path to a .py file) naming a harness class or instance -> an
    instance; None -> the default workflow harness."""
    if not spec:
        return WorkflowHarness()
    from lwtool.tools import ToolsNotLoadable, load_attribute

    try:
        value = load_attribute(spec, "harness")
    except ToolsNotLoadable as exc:
        raise HarnessNotLoadable(str(exc)) from None
    harness = value() if isinstance(value, type) else value
    if not callable(getattr(harness, "run", None)):
        raise HarnessNotLoadable(f"'{spec}' is not a harness (it has no run(task, ctx) method)")
    if not isinstance(getattr(harness, "harness_id", None), str):
        raise HarnessNotLoadable(f"'{spec}' declares no harness_id (a string recorded in "
                                 "the session manifest)")
    return harness

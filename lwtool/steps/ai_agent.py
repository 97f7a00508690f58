"""ai.agent (lwtool's): a model that calls tools until it is done.

The agent loop (lwtool.calls.agent_loop) on the step's model slot, offered only the
tools `with.tools` names: each must be in the locked permissions.tools
(capability_drift) and registered (runtime_config_error), checked before the first
model call. A tool the model asks for outside that list is not called: the model is
told so (a failed `harness.tool_call`) and the step goes on. Every turn
(`harness.model.*`, keyed by step path and turn) and every tool call
(`harness.tool_call.*`, id `<path>#<turn>.<n>`) is committed before it is used, so a
resumed step re-sends nothing committed. The final reply (one with no tool calls) is
held to the output mode as ai.generate's is, repaired under `onFailure.repair`; a
session still calling tools at `with.maxTurns` fails with `max_turns_exceeded`.
"""

from __future__ import annotations

import json
from typing import Any

from lwtool.calls.agent_loop import AnswerCheck, run_agent
from lwtool.record.errors import StepFailure
from lwtool.record.run_state import step_timeout
from lwtool.steps.ai_generate import build_messages, locked_model, repair_plan
from lwtool.steps.inputs import step_input
from lwtool.steps.outputs import OutputInvalid, parse_model_text
from lwtool.steps.tool_call import locked_tool
from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent

resolve_input = step_input

DEFAULT_MAX_TURNS = 10

# What a completed attempt attaches to its result, in order (the inspector's labels).
ATTACHED = ("conversation (the messages, tool results included)", "final reply (raw text)")


def offered_tools(run: Any, names: Any, path: str) -> ToolRegistry:
    """The tools `with.tools` names, as the registry the model is offered."""
    offered = ToolRegistry()
    for name in names if isinstance(names, list) else []:
        offered.tools[name] = locked_tool(run, name, path)
    return offered


def _problem(mode: dict[str, Any]) -> Any:
    def problem(text: str) -> str | None:
        try:
            parse_model_text(text, mode)
        except OutputInvalid as exc:
            return str(exc)
        return None

    return problem


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any], system: str = ""
                  ) -> tuple[Any, list[NewEvent]]:
    """The agent session to its final reply, checked against the output mode; `system`
    is the worker's system prompt, before the step's own."""
    run = scope.run
    with_ = step.get("with") or {}
    model = locked_model(run, with_.get("model"), path)
    tools = offered_tools(run, with_.get("tools"), path)
    mode = step.get("output") or {"mode": "text"}
    attempts, escalated = repair_plan(run, step, path)
    check = AnswerCheck(_problem(mode), attempts - 1,
                        escalated[0] if escalated is not None else None)
    messages = build_messages(step, value, expression_scope, path, False, system)
    max_turns = int(with_.get("maxTurns", DEFAULT_MAX_TURNS))
    result = await run_agent(run, path, model, messages, tools, max_turns=max_turns,
                             timeout=step_timeout(step, run.step_timeout)[0],
                             context=run.tool_context(step, path), answer=check, mode=mode,
                             limit_cause="max_turns_exceeded")
    run.add_usage(path, result.usage)
    try:
        output = parse_model_text(result.text, mode)
    except OutputInvalid as exc:
        tried = f" after {attempts} attempt(s)" if attempts > 1 else ""
        raise StepFailure("step_schema_error", f"the agent's final reply breaks the output "
                          f"contract{tried}: {exc}", path) from None
    run.attach(path, json.dumps(result.messages, ensure_ascii=False).encode("utf-8"))
    run.attach(path, result.text.encode("utf-8"))
    return output, []

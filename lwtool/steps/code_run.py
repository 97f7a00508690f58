"""code.run: the step's pinned source run in the Deno sandbox (lwtool.coderun).

Pins are checked before anything loads (a mismatch refuses the step:
runtime_config_error). The code gets `{ input, tools }`; every `tools.<name>(args)`
is a durable tool call with `caller: "code"` and the id `<stepPath>#a<attempt>.code.<n>`
(the n-th call of that attempt): a resumed attempt re-runs the code and its committed
calls answer from the log (a call that differs from the logged one fails the step:
the code is not deterministic). Only tools in `permissions.tools` and registered can
be called; others fail inside the code. The code's log (stdout and stderr, capped) is
an artifact of the step. A failure is a CodeRunFailed carrying the error envelope the
fixer (onFailure.fixer) is given.
"""

from __future__ import annotations

import json
from typing import Any

from lwtool.calls.tool_calls import ToolCallFailed, call_tool, endpoint_refusal, refuse_call
from lwtool.coderun.deno import DenoMissing
from lwtool.coderun.policy import CodePolicy
from lwtool.coderun.runner import CodeAborted, CodeOutcome, run_code
from lwtool.coderun.source import PinBroken, checked_files
from lwtool.record.errors import StepFailure
from lwtool.record.ids import short_hash
from lwtool.steps.inputs import step_input
from lwtool.steps.outputs import OutputInvalid, check_output
from lwtool.world.base import NewEvent

resolve_input = step_input

# What a completed attempt attaches to its result (the inspector's label).
ATTACHED = ("sandbox log (console output)",)


class CodeRunFailed(StepFailure):
    """The code threw, broke a limit or returned output its schema refuses; `envelope`
    is what a fixer is given (`{cause, message, stack, log}`)."""

    def __init__(self, message: str, path: str, envelope: dict[str, Any]) -> None:
        super().__init__("step_schema_error" if envelope.get("cause") == "output_schema"
                         else "step_failed", message, path)
        self.envelope = envelope


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any],
                  run_timeout_s: float | None = None) -> tuple[Any, list[NewEvent]]:
    settings = step.get("with") or {}
    files = files_of(settings, path)
    run = scope.run
    policy = CodePolicy.of_step(settings, run_timeout_s,
                                (run.lwir.get("permissions") or {}).get("network"),
                                run.tool_context(step, path).granted)
    attempt = int((expression_scope.get("step") or {}).get("attempt", 1))
    outcome = await run_sandboxed(run, path, f"a{attempt}", files,
                                  str(settings.get("entrypoint")), policy, value,
                                  run.tool_context(step, path))
    output = checked_output(outcome, step, path)
    if outcome.log:
        run.attach(path, outcome.log)
    return output, []


def files_of(settings: dict[str, Any], path: str) -> dict[str, str]:
    try:
        return checked_files(settings)
    except PinBroken as exc:
        raise StepFailure("runtime_config_error", f"code.run refused: {exc}", path) from None


async def run_sandboxed(run: Any, path: str, label: str, files: dict[str, str], entry: str,
                        policy: CodePolicy, value: Any, context: Any = None) -> CodeOutcome:
    """One execution whose tool calls are durable under `<path>#<label>.code.<n>`
    (`context`: what those tools may read, the step's grant). A connection
    permissions.network refuses fails the step (capability_denied), whatever the code
    did with the error."""
    denied: list[str] = []

    async def on_call(number: int, name: str, args: Any) -> Any:
        call_id = f"{path}#{label}.code.{number}"
        logged = run.journal.tool_started.get(call_id)
        logged_args = (await run.read_ref(logged["argsRef"]) if "argsRef" in logged
                       else logged.get("args")) if logged is not None else None
        if logged is not None and (logged.get("toolName") != name or
                                   short_hash(logged_args) != short_hash(args)):
            raise CodeAborted(f"the code is not deterministic: its tool call {number} was "
                              f"{logged.get('toolName')}({_brief(logged_args)}) in the "
                              f"log and is {name}({_brief(args)}) now")
        allowed = (run.lwir.get("permissions") or {}).get("tools") or []
        tool = run.tools.get(name) if name in allowed else None
        if tool is None:
            problem = (f"tool '{name}' is not in permissions.tools ({', '.join(allowed) or 'none'})"
                       if name not in allowed else f"tool '{name}' is not registered")
            await refuse_call(run, path, call_id, "code", name, args, problem)
        refused = endpoint_refusal(run, tool)
        if refused is not None:  # the step fails (capability_denied), not just the call
            denied.append(refused[0])
            raise CodeAborted(refused[1])
        # a ToolCallFailed's message is what the code's promise rejects with
        try:
            return await call_tool(run, path, tool, args, "code", call_id, context=context)
        except ToolCallFailed as failed:
            if failed.denied:  # a confined tool went off the list: the step fails
                denied.extend(failed.denied)
                raise CodeAborted(failed.message) from None
            raise

    try:
        outcome = await run_code(files, entry, policy, value, on_call)
    except DenoMissing as exc:
        raise StepFailure("runtime_config_error", str(exc), path) from None
    except CodeAborted as exc:
        if denied:
            raise StepFailure("capability_denied", str(exc), path,
                              details={"deniedHosts": denied}) from None
        raise StepFailure("step_failed", str(exc), path) from None
    if outcome.denied:
        raise denied_failure(outcome.denied, policy, path, run)
    return outcome


def denied_failure(targets: list[str], policy: CodePolicy, path: str, run: Any) -> StepFailure:
    """The step's failure for connections permissions.network refused."""
    listed = ", ".join(policy.hosts) or "none"
    why = "" if policy.network == "allow" else \
        " (the step's sandbox.network is deny)"
    if run is not None:
        run.attach(path, ("refused connections: " + ", ".join(targets) + "\n").encode())
    return StepFailure("capability_denied", f"code.run tried to connect to "
                       f"{', '.join(targets)}, which permissions.network does not allow "
                       f"(allowed: {listed}){why}; private, loopback and link-local "
                       "addresses must be listed as addresses", path,
                       details={"deniedHosts": targets})


def checked_output(outcome: CodeOutcome, step: dict[str, Any], path: str) -> Any:
    """The outcome's value, checked against the step's output mode; else CodeRunFailed."""
    log = outcome.log[-4000:].decode("utf-8", "replace")
    if not outcome.ok:
        message = str(outcome.error)
        raise CodeRunFailed(f"code.run failed: {message}", path, {
            "cause": outcome.cause, "message": message, "stack": outcome.stack, "log": log})
    try:
        check_output(outcome.value, step.get("output"), "the code's output")
    except OutputInvalid as exc:
        raise CodeRunFailed(str(exc), path, {"cause": "output_schema", "message": str(exc),
                                             "stack": "", "log": log}) from None
    return outcome.value


def _brief(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."

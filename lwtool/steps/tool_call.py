"""tool.call: one registered tool, called directly with the step input.

A direct-execute step type (spec: executeToolCallStep): its call is recorded by
`harness.execute_step.started` (with `toolName`) and `.succeeded`, and its result by
StepCompleted; `harness.tool_call.*` is for calls by a model or by code."""

from __future__ import annotations

from typing import Any

from lwtool.calls.tool_calls import endpoint_refusal, raised_at
from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.capability.hosts import ConnectionDenied
from lwtool.record.errors import StepFailure, TransientError
from lwtool.record.run_state import step_timeout
from lwtool.steps.inputs import step_input
from lwtool.steps.outputs import checked_step_output
from lwtool.tools import WAIT_SLICE, Interrupted, Refused, Tool, ToolFailed
from lwtool.world.base import NewEvent

resolve_input = step_input


def locked_tool(run: Any, name: Any, path: str) -> Tool:
    """The registered tool `name`, which the locked LWIR must permit
    (`permissions.tools`): else the step fails, capability_drift or (not registered)
    runtime_config_error."""
    allowed = (run.lwir.get("permissions") or {}).get("tools") or []
    if name not in allowed:
        raise StepFailure("capability_drift", f"tool '{name}' is not in the locked "
                          "permissions.tools", path)
    tool: Tool | None = run.tools.get(name)
    if tool is None:
        known = ", ".join(run.tools.names()) or "none"
        raise StepFailure("runtime_config_error", f"tool '{name}' is not registered "
                          f"(registered: {known}; pass --tools MODULE:ATTR)", path)
    return tool


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any]) -> tuple[Any, list[NewEvent]]:
    run = scope.run
    name = (step.get("with") or {}).get("tool")
    tool = locked_tool(run, name, path)
    refused = endpoint_refusal(run, tool)
    if refused is not None:
        raise StepFailure("capability_denied", refused[1], path,
                          details={"deniedHosts": [refused[0]]})
    try:
        # The loop's own wait for a sync tool (Tool.invoke) does not see the step's
        # deadline: only when that is far away (a tool may not finish past it).
        alone = tool.waits and run.sole_step() \
            and step_timeout(step, run.step_timeout)[0] >= 100 * WAIT_SLICE
        result = await tool.invoke(value, run.tool_threads, alone,
                                   run.tool_context(step, path))
    except TransientError as exc:
        raise StepFailure("step_failed", run.redacted(f"tool '{name}' failed (transient): "
                                                      f"{exc}"), path, transient=True) from None
    except Interrupted:
        raise
    except ConnectionDenied as exc:  # a confined tool (--confine-tools) went off the list
        raise StepFailure("capability_denied", str(exc), path,
                          details={"deniedHosts": exc.targets}) from None
    except (Refused, ToolFailed) as exc:  # said in the tool's words: nothing more to add
        said = "refused the call" if isinstance(exc, Refused) else "failed"
        raise StepFailure("step_failed", run.redacted(f"tool '{name}' {said}: {exc}"),
                          path) from None
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001
        # A tool's failure is the step's, even SystemExit or KeyboardInterrupt raised by
        # the tool itself (Ctrl-C reaches the main thread, never a tool's own frame).
        where, trace = raised_at(exc, tool.fn)
        raise StepFailure("step_failed", run.redacted(
            f"tool '{name}' raised {type(exc).__name__}: {exc}{where}"), path,
            details={"traceback": run.redacted(trace)}) from None
    try:
        result = to_json(result)
    except NotJson as exc:
        raise StepFailure("step_schema_error", f"tool '{name}' returned a value that is not "
                          f"JSON {exc}", path) from None
    return checked_step_output(run, step, result, f"tool '{name}' output", path), []

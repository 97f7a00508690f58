"""Tool calls made by a model (agent loop) or by code (the code.run `tools` proxy),
recorded with the spec's `harness.tool_call.*` events and replayed from them.

`started` is committed before the tool runs (without an fsync: evidence of a call in
flight), `succeeded` (with `result`, or `resultRef` to an artifact when the result is
over the inline limit, and `durationMs`) or `failed` (with `error`) durably after it.
Call ids are deterministic per step attempt (`<stepPath>#<turn>.<n>` for a model's
calls, `<stepPath>#code.<n>` for code's), so a resumed session finds a committed
result under the same id and is handed it without the tool being called again.

A `tool.call` step is not a caller here: the spec's `caller` is `"model" | "code"`,
and a tool.call step is a direct-execute step type, recorded with
`harness.execute_step.started/succeeded` (carrying `toolName`) and its StepCompleted.
"""

from __future__ import annotations

import os
import time
from typing import Any, Literal, NoReturn

from lwtool.canonical.compact import dumps_bytes
from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.capability.hosts import ConnectionDenied
from lwtool.record.errors import WaitingForInput
from lwtool.record.ids import without_reserved
from lwtool.tools import Refused, Tool, ToolContext, ToolFailed
from lwtool.world.base import INLINE_LIMIT, NewEvent

Caller = Literal["model", "code"]


class ToolCallFailed(Exception):
    """The tool raised; `message` is what `harness.tool_call.failed` recorded; `denied`:
    the hosts a confined tool was refused (its caller's step fails capability_denied)."""

    def __init__(self, call_id: str, message: str, denied: list[str] | None = None) -> None:
        super().__init__(message)
        self.call_id = call_id
        self.message = message
        self.denied = denied or []


async def call_tool(run: Any, path: str, tool: Tool, args: Any, caller: Caller,
                    call_id: str, turn: int | None = None,
                    context: ToolContext | None = None) -> Any:
    """Run one tool call durably; a call committed earlier is replayed, not re-run.
    `context`: what the tool may read (the calling step's granted secrets); a result
    or error holding one of the run's secrets has it masked before anyone sees it."""
    recorded = run.journal.tool_calls.get(call_id)
    if recorded is not None:
        if "error" in recorded:
            raise ToolCallFailed(call_id, str(recorded["error"]))
        if "resultRef" in recorded:
            return await run.read_ref(recorded["resultRef"])
        return recorded.get("result")
    refused = endpoint_refusal(run, tool)
    if refused is not None:
        await refuse_call(run, path, call_id, caller, tool.name, args, refused[1], turn)
    args = without_reserved(args)  # a model or code never writes lwtool's own ids
    if tool.reserve is not None:
        args = tool.reserve(args, call_id)
    hidden = path in run.sensitive_paths  # a sensitive step's calls: sealed, by ref
    logged = {"argsRef": await run.sealed_ref(args)} if hidden else None
    run.note([_started(path, call_id, caller, tool.name, args, turn, logged)], defer=False)
    started = time.perf_counter()
    try:
        result = await tool.invoke(args, run.tool_threads, context=context)
    except WaitingForInput:  # a sub-run waits for a person: the call is in flight still
        raise
    except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - the caller
        # decides what a failure means; a tool's own SystemExit must not end the process
        # The caller is a model (or code a model wrote): its message names the tool's
        # file, never a local path; the traceback stays in the event for the user.
        where, trace = raised_at(exc, tool.fn, paths=False)
        message = f"tool '{tool.name}' refused the call: {exc}" if isinstance(exc, Refused) \
            else f"tool '{tool.name}' failed: {exc}" if isinstance(exc, ToolFailed) \
            else f"tool '{tool.name}' raised {type(exc).__name__}: {exc}{where}"
        message = run.redacted(message)
        denied = exc.targets if isinstance(exc, ConnectionDenied) else []
        await _outcome(run, path, "failed", {
            "callId": call_id, "error": message, "traceback": trace,
            "durationMs": _ms(started), **({"deniedHosts": denied} if denied else {})})
        raise ToolCallFailed(call_id, message, denied) from None
    try:
        result = run.redacted(to_json(result))
    except NotJson as exc:
        message = f"tool '{tool.name}' returned a value that is not JSON {exc}"
        await _outcome(run, path, "failed", {
            "callId": call_id, "error": message, "durationMs": _ms(started)})
        raise ToolCallFailed(call_id, message) from None
    data = dumps_bytes(result)
    payload: dict[str, Any] = {"callId": call_id, "durationMs": _ms(started)}
    if hidden:
        payload["resultRef"] = await run.sealed_ref(result)
    elif len(data) > INLINE_LIMIT:
        payload["resultRef"] = await run.world.put_artifact(data, run.fsyncs)
    else:
        payload["result"] = result
    await _outcome(run, path, "succeeded", payload)
    return result


async def _outcome(run: Any, path: str, how: str, payload: dict[str, Any],
                   *before: NewEvent) -> None:
    """Commit a call's `harness.tool_call.<how>` (after `before`, in the same commit); it
    joins the run's journal, so a step attempt retried in this process is handed it, as
    a resumed one would be."""
    await run.record([*before, NewEvent(f"harness.tool_call.{how}", payload, path)])
    run.journal.tool_calls[str(payload["callId"])] = payload


async def refuse_call(run: Any, path: str, call_id: str, caller: Caller, name: str,
                      args: Any, problem: str, turn: int | None = None) -> NoReturn:
    """A call that cannot be made (an unknown tool, arguments that are not a JSON
    object): recorded as started and failed, raised as ToolCallFailed like a tool's own
    failure, so the caller (a model) is told what was wrong and can try again."""
    recorded = run.journal.tool_calls.get(call_id)
    message = str(recorded["error"]) if recorded is not None and "error" in recorded else \
        f"refused: {problem}"
    if recorded is None:
        logged = without_reserved(args) if isinstance(args, (dict, list, str)) else None
        await _outcome(run, path, "failed", {"callId": call_id, "error": message,
                                             "durationMs": 0},
                       _started(path, call_id, caller, name, logged, turn))
    raise ToolCallFailed(call_id, message)


def endpoint_refusal(run: Any, tool: Tool) -> tuple[str, str] | None:
    """(host:port, why) when the workflow lists hosts in permissions.network and the
    tool's endpoint (an HTTP MCP server's URL) is not one of them, or resolves to a
    private, loopback or link-local address not listed; None when allowed, when the
    workflow lists no hosts, or for a tool lwtool does not connect to itself. Decided
    once per run and endpoint (one name lookup)."""
    if tool.endpoint is None:
        return None
    listed = (run.lwir.get("permissions") or {}).get("network")
    if not listed:
        return None
    key = ("endpoint", tool.endpoint)
    if key not in run.memo:
        from urllib.parse import urlsplit

        from lwtool.capability.hosts import parse_all, refusal

        parts = urlsplit(tool.endpoint)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        why = refusal(parse_all(listed), host, port)
        run.memo[key] = None if why is None else (f"{host}:{port}", (
            f"tool '{tool.name}' connects to {tool.endpoint}: {why}"))
    found: tuple[str, str] | None = run.memo[key]
    return found


def _started(path: str, call_id: str, caller: Caller, name: str, args: Any,
             turn: int | None, sealed: dict[str, Any] | None = None) -> NewEvent:
    """`harness.tool_call.started` (`turn` only for a model's calls; `sealed`: the
    args' sealed ref instead of the args, for a sensitive step)."""
    payload: dict[str, Any] = {"callId": call_id, "caller": caller, "toolName": name,
                               **(sealed or {"args": args})}
    if turn is not None:
        payload = {"turn": turn, **payload}
    return NewEvent("harness.tool_call.started", payload, path)


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


TRACE_LIMIT = 8 * 1024  # characters of a failed call's traceback kept in its event


def raised_at(exc: BaseException, fn: Any, paths: bool = True) -> tuple[str, str]:
    """Where a tool raised, for its message (` (at tools.py:12 in fetch)`: the last
    frame in the tool's own file, else the innermost; the file relative to the working
    directory when inside it, else its whole path, or without `paths` its name alone),
    and the traceback's text (its last TRACE_LIMIT characters) for the failure event."""
    import inspect
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    try:
        own = inspect.getsourcefile(inspect.unwrap(fn))
    except TypeError:
        own = None
    chosen = next((f for f in reversed(frames) if own and f.filename == own),
                  frames[-1] if frames else None)
    where = ""
    if chosen is not None:
        name = chosen.filename if paths else os.path.basename(chosen.filename)
        try:
            name = os.path.relpath(name) if not os.path.relpath(name).startswith("..") \
                else name
        except ValueError:  # another drive
            pass
        where = f" (at {name}:{chosen.lineno} in {chosen.name})"
    text = "".join(traceback.format_exception(exc))
    return where, text[-TRACE_LIMIT:]

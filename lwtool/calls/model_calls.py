"""Model calls recorded with the spec's `harness.model.*` events and replayed from them.

The request is logged (`harness.model.called`, without an fsync: evidence of a call in
flight) before the call; the reply is committed (`harness.model.responded`, durably,
with its text, tool calls and usage) before anyone uses it. Replies are keyed by
(session path, turn): a resumed session is handed committed replies and never pays
for them twice; only the turn in flight when the process died is asked again. A reply
joins the run's journal as it is committed, so a step attempt retried in the same
process (an agent whose turn 3 met a 503) goes on from its committed turns, as a
resumed one would.
"""

from __future__ import annotations

from typing import Any

from lwtool.calls.limits import limiter_for
from lwtool.calls.models import ModelCallFailed, OutputRequest, call_model
from lwtool.calls.scripted import ScriptedModel
from lwtool.record.errors import StepFailure
from lwtool.record.ids import short_hash
from lwtool.record.sensitive import keyed_hash
from lwtool.world.base import NewEvent


async def _unsealed(run: Any, recorded: dict[str, Any]) -> dict[str, Any]:
    """A committed reply as the call gave it: a sensitive step's text and tool calls
    read back from their sealed artifact."""
    response = recorded.get("response") or {}
    ref = response.get("replyRef")
    if ref is None:
        return recorded
    return {**recorded, "response": {"usage": response.get("usage") or {},
                                     **await run.read_ref(ref)}}


def model_label(model: str | ScriptedModel) -> str:
    """How a model is named in events (a scripted model has no provider string)."""
    return f"scripted:{model.name}" if isinstance(model, ScriptedModel) else model


async def recorded_model_call(run: Any, path: str, turn: int, model: str | ScriptedModel,
                              messages: list[dict[str, Any]], mode: dict[str, Any],
                              prompt_text: str, request: OutputRequest | None,
                              timeout: float | None,
                              tools: list[dict[str, Any]] | None = None,
                              since: int = 0) -> dict[str, Any]:
    """The `harness.model.responded` payload of this turn: from the journal when it was
    committed before, else from a new call (logged before, committed after).

    `since`: the messages before this index were logged with earlier turns (the previous
    request and its reply), so `request.messages` holds only the new ones, from
    `request.messagesFrom` on; `promptHash` covers them all. A long session then logs
    each message once instead of its whole history every turn."""
    recorded = run.journal.replies.get((path, turn))
    if recorded is not None:
        return await _unsealed(run, dict(recorded))
    if run.budget is not None:
        run.budget.refresh()  # what the runs sharing it committed meanwhile
        spent = run.budget.spent()
        if spent is not None:  # no call starts once the run's budget is spent
            raise StepFailure("budget_exceeded", f"no model call started: {spent}", path)
    call_id = f"{path}#{turn}"
    limiter = limiter_for(model) if isinstance(model, str) else None
    if limiter is None:
        return await _call(run, path, turn, call_id, model, messages, mode, prompt_text,
                           request, timeout, tools, since)

    def waiting(why: str) -> None:  # evidence, shown by live progress
        run.note([NewEvent("harness.model.waiting", {"turn": turn, "callId": call_id,
                                                     "model": model, "reason": why}, path)],
                 defer=False)

    async with limiter.slot(waiting):
        responded = await _call(run, path, turn, call_id, model, messages, mode,
                                prompt_text, request, timeout, tools, since)
    usage = responded["response"]["usage"]
    limiter.used(int(usage.get("inputTokens", 0)) + int(usage.get("outputTokens", 0)))
    return responded


async def _call(run: Any, path: str, turn: int, call_id: str, model: str | ScriptedModel,
                messages: list[dict[str, Any]], mode: dict[str, Any], prompt_text: str,
                request: OutputRequest | None, timeout: float | None,
                tools: list[dict[str, Any]] | None, since: int) -> dict[str, Any]:
    """One new call: logged before (`harness.model.called`), committed after."""
    logged: dict[str, Any] = {"model": model_label(model), "messages": messages[since:],
                              "tools": tools or [],
                              "responseFormat": request.response_format if request else None}
    if since:
        logged["messagesFrom"] = since
    hidden = path in run.sensitive_paths  # a sensitive step's prompt: sealed, by ref
    if hidden:
        logged["messagesRef"] = await run.sealed_ref(logged.pop("messages"))
    run.note([NewEvent("harness.model.called", {
        "turn": turn, "callId": call_id,
        "promptHash": keyed_hash(run.sensitive_key, messages) if hidden
        else short_hash(messages), "request": logged}, path)])
    try:
        reply = await call_model(model, messages, mode, prompt_text, request, timeout, tools)
    except ModelCallFailed as exc:
        waits = {"retryAfterS": exc.retry_after} if exc.retry_after is not None else {}
        raise StepFailure(exc.cause, str(exc), path, transient=exc.transient,  # type: ignore[arg-type]
                          details=waits) from None
    response: dict[str, Any] = {"text": reply.text, "usage": reply.usage}
    if reply.tool_calls:
        response["toolCalls"] = reply.tool_calls
    responded = {"turn": turn, "callId": call_id, "stepPath": path,
                 "model": {"provider": reply.provider, "modelId": reply.model_id},
                 "response": response, "durationMs": reply.duration_ms}
    logged_reply = responded
    if hidden:  # the text and tool calls sealed; usage stays (reports count it)
        kept = {k: v for k, v in response.items() if k == "usage"}
        kept["replyRef"] = await run.sealed_ref(
            {k: v for k, v in response.items() if k != "usage"})
        logged_reply = {**responded, "response": kept}
    await run.record([NewEvent("harness.model.responded", logged_reply, path)])
    run.journal.replies[(path, turn)] = logged_reply  # a retry in this process reuses it
    run.replies += 1
    if run.budget is not None:
        run.budget.count(responded)
    return responded

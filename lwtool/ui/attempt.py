"""The inspector's page of one step attempt: its input, output, artifacts, model and
tool calls, error and events."""

from __future__ import annotations

import time
from typing import Any

from lwtool.observe.timeline import Timeline
from lwtool.ui.text import full, money, pretty, span, stamp
from lwtool.world.base import Event, RunRecord


def attempt_page(record: RunRecord, events: list[Event], path: str, number: int
                 ) -> dict[str, Any] | None:
    """Attempt `number` of the step at `path`: its input, output, artifacts, model and
    tool calls, error and events. None when the run has no such attempt."""
    timeline = Timeline.of(record.run_id, events)
    attempt = next((a for a in timeline.attempts
                    if a.path == path and a.attempt == number), None)
    if attempt is None:
        return None
    opened = next((e for e in events if e.seq == attempt.seq and e.step_path == path
                   and e.type == "StepAttemptStarted"), None)
    started = opened.payload if opened is not None else {}
    closing = next((e for e in events if e.seq >= attempt.seq and e.step_path == path
                    and e.type in ("StepCompleted", "StepAttemptFailed", "StepSkipped")), None)
    envelope = (closing.payload.get("envelope") or {}) if closing is not None else {}
    mine = [e for e in events if e.step_path == path and e.seq >= attempt.seq
            and (closing is None or e.seq <= closing.seq)]
    calls = []
    for call in attempt.calls:
        call_events = [e for e in mine if e.payload.get("callId") == call.call_id]
        request = next((e.payload.get("request") for e in call_events
                        if e.type == "harness.model.called"), None)
        response = next((e.payload.get("response") for e in call_events
                         if e.type == "harness.model.responded"), None)
        args = next((e.payload.get("args") for e in call_events
                     if e.type == "harness.tool_call.started"), None)
        result = next((e.payload for e in call_events
                       if e.type == "harness.tool_call.succeeded"), None)
        calls.append({"id": call.call_id, "kind": call.kind, "name": call.name or
                      call.request_model, "status": call.status, "error": call.error,
                      "duration": span((call.ended or call.started) - call.started),
                      "tokens": call.usage, "cost": money(call.cost_usd, 1),
                      "request": pretty(request) if request is not None else "",
                      "response": pretty(response) if response is not None else "",
                      "args": pretty(args) if args is not None else "",
                      "result": pretty(result.get("result")) if result and "result" in result
                      else "", "result_ref": (result or {}).get("resultRef", "")})
    return {
        "run": {"id": record.run_id},
        "attempt": {"path": attempt.path, "uses": attempt.uses,
                    "attempt": attempt.attempt, "status": attempt.status,
                    "error": attempt.error, "cause": attempt.cause,
                    "started": stamp(attempt.started), "duration": span(
                        (attempt.ended or time.time()) - attempt.started)},
        "input": pretty(started["input"]) if "input" in started else "",
        "input_ref": started.get("inputRef", ""), "input_hash": started.get("inputHash", ""),
        "output": pretty(envelope["output"]) if "output" in envelope else "",
        "output_ref": envelope.get("outputRef", ""),
        "artifacts": _labelled(attempt.uses, list(envelope.get("artifacts") or [])),
        "chosen": (closing.payload.get("chosen") if closing is not None else None),
        "calls": calls,
        "events": [{"seq": e.seq, "type": e.type, "full": full(e.payload)} for e in mine],
    }


def _labelled(uses: str, refs: list[str]) -> list[dict[str, str]]:
    """An attempt's attached artifacts with what each is (its step type's ATTACHED)."""
    from lwtool.steps import STEP_KINDS

    labels = getattr(STEP_KINDS.get(uses), "ATTACHED", ())
    return [{"ref": ref, "label": labels[n] if n < len(labels) else f"artifact {n + 1}"}
            for n, ref in enumerate(refs)]

"""ai.generate: one model call on the step's model slot (more only to repair a reply
that breaks the output contract: onFailure.repair mode self, on the same slot, or mode
escalate, on repair.model from the second attempt on). No tools offered.

The request is logged (harness.model.called) before the call; the reply is committed
(harness.model.responded, durably) before it is used, keyed by (step path, turn): a
resumed step reuses committed replies and never pays for them twice.
"""

from __future__ import annotations

import json
from typing import Any

from lwtool.calls.model_calls import recorded_model_call
from lwtool.calls.models import output_request, resolve_slot
from lwtool.record.errors import StepFailure
from lwtool.record.run_state import step_timeout
from lwtool.steps.inputs import resolve, step_input
from lwtool.steps.outputs import OutputInvalid, parse_model_text
from lwtool.world.base import NewEvent

resolve_input = step_input

# What a completed attempt attaches to its result, in order (the inspector's labels).
ATTACHED = ("prompt (the messages sent)", "model reply (raw text)")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _format_instruction(mode: dict[str, Any]) -> str:
    kind = mode.get("mode", "text")
    if kind == "choice":
        return "Reply with exactly one of: " + ", ".join(mode.get("values") or []) + "."
    if kind in ("object", "array", "json"):
        schema = mode.get("schema")
        shape = f" that matches this JSON Schema: {json.dumps(schema)}" if schema else ""
        return f"Reply with only JSON{shape}."
    return ""


def build_messages(step: dict[str, Any], value: Any, expression_scope: dict[str, Any],
                   path: str, native: bool = False,
                   worker_system: str = "") -> list[dict[str, str]]:
    """The spec's layout ("The model sees the step as"): the system prompt is the
    worker's system prompt and skill list (`worker_system`: a definition's), then
    `with.system`; one user message: `with.prompt`, a blank line, `Input:` and the
    resolved step input (the input alone without `with.prompt`). Where the provider does
    not enforce the output mode itself (`native`), its format instruction ends the
    system prompt, after a blank line."""
    with_ = step.get("with") or {}
    mode = step.get("output") or {"mode": "text"}
    system_parts = [worker_system] if worker_system else []
    if "system" in with_:
        system_parts.append(_text(resolve(with_["system"], expression_scope, path, "with.system")))
    instruction = "" if native else _format_instruction(mode)
    if instruction:
        system_parts.append(instruction)
    user = _text(value)
    if "prompt" in with_:
        user = _text(resolve(with_["prompt"], expression_scope, path, "with.prompt")) + \
            "\n\nInput:\n" + user
    messages = [{"role": "system", "content": "\n\n".join(system_parts)}] if system_parts else []
    return [*messages, {"role": "user", "content": user}]


def locked_model(run: Any, slot: Any, path: str, what: str = "model slot") -> Any:
    """The model behind a slot the locked LWIR permits (`permissions.models`); else the
    step fails with capability_drift."""
    if slot not in ((run.lwir.get("permissions") or {}).get("models") or []):
        raise StepFailure("capability_drift", f"{what} '{slot}' is not in the locked "
                          "permissions.models", path)
    return resolve_slot(str(slot), run.models)


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any], system: str = ""
                  ) -> tuple[Any, list[NewEvent]]:
    """One model call (repaired `onFailure.repair.maxAttempts` times in `self` mode);
    `system` is the worker's system prompt, before the step's own."""
    run = scope.run
    with_ = step.get("with") or {}
    model = locked_model(run, with_.get("model"), path)
    mode = step.get("output") or {"mode": "text"}
    request = output_request(model, mode)
    turns, escalated = repair_plan(run, step, path)
    messages = build_messages(step, value, expression_scope, path, request.native,
                              system)
    prompt_text = messages[-1]["content"]
    error = "no reply"
    for turn in range(turns):
        if turn == 1 and escalated is not None:
            model = escalated[0]
            request = output_request(model, mode)
        reply = await recorded_model_call(run, path, turn, model, messages, mode, prompt_text,
                                          request, step_timeout(step, run.step_timeout)[0])
        run.add_usage(path, reply["response"].get("usage") or {})
        text = reply["response"]["text"]
        try:
            value = parse_model_text(_unwrap(text) if request.wrapped else text, mode)
            run.attach(path, json.dumps(messages, ensure_ascii=False).encode("utf-8"))
            run.attach(path, text.encode("utf-8"))
            return value, []
        except OutputInvalid as exc:
            error = str(exc)
            messages = [*messages, {"role": "assistant", "content": text},
                        {"role": "user", "content": f"That reply does not fit: {error}. "
                         "Reply again, correctly."}]
    where = f" ({turns - 1} on repair model slot '{escalated[1]}')" \
        if escalated is not None and turns > 1 else ""
    raise StepFailure("step_schema_error", f"model reply breaks the output contract after "
                      f"{turns} attempt(s){where}: {error}", path)


REPAIRS = ("self", "escalate")


def repair_plan(run: Any, step: dict[str, Any], path: str) -> tuple[int, Any]:
    """A model step's replies in all for one that breaks the output contract (1 without
    `onFailure.repair`), and for an escalated repair (model, slot) its passes run on,
    the slot locked as the step's own is (else None)."""
    repair = (step.get("onFailure") or {}).get("repair") or {}
    attempts = int(repair.get("maxAttempts", 2)) if repair.get("mode") in REPAIRS else 1
    stronger = repair_slot(step)
    return attempts, (locked_model(run, stronger, path, "repair model slot"), stronger) \
        if stronger is not None else None


def repair_slot(step: dict[str, Any]) -> str | None:
    """The model slot a model step's escalated repair passes run on (None: no
    escalation)."""
    on_failure = step.get("onFailure")
    repair = on_failure.get("repair") if isinstance(on_failure, dict) else None
    if isinstance(repair, dict) and repair.get("mode") == "escalate" and \
            isinstance(repair.get("model"), str):
        return str(repair["model"])
    return None


def _unwrap(text: str) -> str:
    """A wrapped structured reply `{"value": …}` -> the value's JSON text."""
    try:
        reply = json.loads(text)
    except ValueError:
        return text
    if isinstance(reply, dict) and set(reply) == {"value"}:
        return json.dumps(reply["value"], ensure_ascii=False)
    return text

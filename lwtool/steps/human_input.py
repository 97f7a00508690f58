"""human.input: wait for a person's answer (an lwtool extension step type).

`with: {prompt, schema}`: `prompt` is a template shown to the person; `schema` (in the
schema subset) is what the answer must satisfy. The first time a run reaches the step
it commits `HumanInputRequested` (the rendered prompt and the schema) and the step
waits: the scope runs what else it can, then the run stops with status `waiting`
(unless an answer was given meanwhile: it then goes on, lwtool.runtime.interpreter).
`lwtool respond` (lwtool.runtime.respond) checks an answer against the schema and
commits `HumanInputReceived`; when the run goes on, the step completes with that answer
as its output, and nothing that committed before is called again. The step is keyed by
its path, so each parallel branch and each loop visit waits on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lwtool.expr.functions import to_text
from lwtool.record.errors import StepFailure, WaitingForInput
from lwtool.steps.inputs import resolve
from lwtool.steps.outputs import OutputInvalid, check_schema
from lwtool.world.base import Event, NewEvent

REQUESTED = "HumanInputRequested"
RECEIVED = "HumanInputReceived"


def request_of(event: Event) -> dict[str, Any]:
    """What a HumanInputRequested asks, as RunWaitingError and `lwtool runs` show it."""
    payload = event.payload
    return {"stepPath": event.step_path, "stepId": payload.get("stepId"),
            "prompt": payload.get("prompt"), "schema": payload.get("schema")}


def open_requests(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The requests among `events` with no answer yet, in the order they were made
    (what `lwtool runs` and the inspector show under a waiting run)."""
    asked: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.step_path is None:
            continue
        if event.type == REQUESTED:
            asked[event.step_path] = request_of(event)
        elif event.type == RECEIVED:
            asked.pop(event.step_path, None)
    return list(asked.values())


async def run_human_input(scope: Any, step: dict[str, Any], path: str,
                          visit: int) -> tuple[Any, list[Event]]:
    """The answer and its committed StepCompleted; raises WaitingForInput while the
    step has no answer (requesting one first, once per step path)."""
    run = scope.run
    settings = step.get("with") or {}
    schema = settings.get("schema")
    answer = run.journal.answers.get(path)
    if answer is None:
        request = run.journal.requests.get(path)
        if request is None:
            expression_scope = scope.expression_scope(step["id"], path, visit, 1)
            prompt = to_text(resolve(settings.get("prompt", ""), expression_scope, path,
                                     "with.prompt"))
            request = {"stepId": step["id"], "visit": visit, "prompt": prompt,
                       "schema": schema}
            committed = await run.record([NewEvent(REQUESTED, request, path)])
            run.journal.requests[path] = committed[0].payload
        raise WaitingForInput([{"stepPath": path, "stepId": step["id"],
                                "prompt": request.get("prompt"), "schema": schema}])
    value = answer.get("value")
    try:  # checked when it was given; checked again against the locked schema
        check_schema(value, schema, f"the answer to {path}")
    except OutputInvalid as exc:
        raise StepFailure("step_schema_error", str(exc), path) from None
    envelope, inline = await run.envelope(value, "human.input",
                                          {"mode": "object", "schema": schema})
    scope.executed(step["id"])
    committed = await run.record([NewEvent("StepCompleted", {
        "stepId": step["id"], "uses": "human.input", "visit": visit, "attempt": 1,
        "envelope": envelope}, path)], artifacts=inline)
    return value, committed

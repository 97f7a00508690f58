"""Answer a human.input request of a run (`lwtool respond`, `lwtool.respond`).

The answer is checked against the schema the request recorded (the locked step's) and
committed as `HumanInputReceived` at the step's path, under the run lock: nothing is
written for a wrong answer, a run that is executing, a path with no open request, or
one answered already. The run goes on when it is resumed (`lwtool replay`, or
`lwtool respond --resume`): the step completes with the answer as its output.
"""

from __future__ import annotations

import getpass
from typing import Any

from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.record.journal import Journal
from lwtool.steps import human_input
from lwtool.steps.human_input import RECEIVED, REQUESTED
from lwtool.steps.outputs import OutputInvalid, check_schema
from lwtool.world.base import NewEvent, World


class NotWaiting(Exception):
    """The run has no open request at that step path (the message lists the open ones)."""


class AnswerInvalid(Exception):
    """The answer does not satisfy the request's schema (or is not JSON)."""


def open_requests(journal: Journal) -> dict[str, dict[str, Any]]:
    """Step path -> HumanInputRequested payload, for the requests with no answer."""
    return {path: request for path, request in journal.requests.items()
            if path not in journal.answers}


def waiting_for(world: World, run_id: str) -> list[dict[str, Any]]:
    """The run's open requests, in the order they were made: {stepPath, stepId, prompt,
    schema}."""
    return human_input.open_requests(world.events(run_id, types=[REQUESTED, RECEIVED]))


def _who() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name for this uid (a bare container)
        return None


def respond(world: World, run_id: str, step_path: str, value: Any,
            by: str | None = None) -> dict[str, Any]:
    """Commit `value` as the answer to the run's request at `step_path`. Returns
    {runId, stepPath, open: [step paths still waiting]}. Raises NotWaiting,
    AnswerInvalid, RunNotFound or RunLocked (the run is executing), writing nothing."""
    try:
        value = to_json(value)
    except NotJson as exc:
        raise AnswerInvalid(f"the answer to {step_path} is not JSON {exc}") from None
    world.get_run(run_id)  # RunNotFound before any lock file is made
    with world.lock_run(run_id):
        journal = Journal.from_events(world.events(run_id))
        if journal.terminal is not None:
            ended = "completed" if journal.terminal.type == "RunCompleted" else "failed"
            raise NotWaiting(f"run {run_id} has {ended}; it waits for no input")
        waiting = open_requests(journal)
        request = waiting.get(step_path)
        if request is None:
            already = " (answered already)" if step_path in journal.answers else ""
            listed = ", ".join(sorted(waiting)) or "none"
            raise NotWaiting(f"run {run_id} has no open request for input at "
                             f"{step_path}{already}; open requests: {listed}")
        try:
            check_schema(value, request.get("schema"), f"the answer to {step_path}")
        except OutputInvalid as exc:
            raise AnswerInvalid(str(exc)) from None
        who = by if by is not None else _who()
        world.append(run_id, [NewEvent(RECEIVED, {
            "stepId": request.get("stepId"), "value": value,
            **({"respondedBy": who} if who else {})}, step_path)])
    return {"runId": run_id, "stepPath": step_path,
            "open": sorted(p for p in waiting if p != step_path)}

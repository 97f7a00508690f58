"""Answer a human.input request of a run (`lwtool respond`, `lwtool.respond`).

The answer is checked against the schema the request recorded (the locked step's) and
committed as `HumanInputReceived` at the step's path: nothing is written for a wrong
answer, a path with no open request, or one answered already (answers to one run are
given one at a time, under a lock of their own). A run that waits goes on when it is
resumed (`lwtool replay`, or `lwtool respond --resume`): the step completes with the
answer as its output. A run that is executing (its other steps) takes the answer as it
is: the commit lands only while the run's status is `running`, and before the run would
stop to wait it looks for answers given meanwhile (lwtool.runtime.interpreter), so it
goes on instead; an answer that meets the run just as it stops is committed once the
run has let go of its lock, as to any waiting run.
"""

from __future__ import annotations

import getpass
import hashlib
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.record.journal import Journal
from lwtool.steps import human_input
from lwtool.steps.human_input import RECEIVED, REQUESTED
from lwtool.steps.outputs import OutputInvalid, check_schema
from lwtool.world.base import NewEvent, RunLocked, RunStatusChanged, World

WAIT = 10.0  # seconds an answer waits for another's, or for a run changing its status
POLL = 0.05


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
    {runId, stepPath, open: [step paths still waiting], executing: whether a process is
    executing the run (it goes on with the answer itself)}. Raises NotWaiting,
    AnswerInvalid, RunNotFound, or RunLocked (another answer to the run, or the run's
    change of status, took longer than WAIT seconds), writing nothing."""
    try:
        value = to_json(value)
    except NotJson as exc:
        raise AnswerInvalid(f"the answer to {step_path} is not JSON {exc}") from None
    world.get_run(run_id)  # RunNotFound before any lock file is made
    who = by if by is not None else _who()
    until = time.monotonic() + WAIT
    with _answering(world, run_id, until):
        while True:
            with ExitStack() as held:
                try:
                    held.enter_context(world.lock_run(run_id))
                except RunLocked:
                    pass  # a process executes the run: the answer goes to it as it runs
                else:
                    return {**_commit(world, run_id, step_path, value, who, None),
                            "executing": False}
            try:
                return {**_commit(world, run_id, step_path, value, who, "running"),
                        "executing": True}
            except RunStatusChanged:  # it stopped to wait just now: its lock comes free
                if time.monotonic() > until:
                    raise RunLocked(f"run {run_id} is changing its status; try again") from None
                time.sleep(POLL)


@contextmanager
def _answering(world: World, run_id: str, until: float) -> Iterator[None]:
    """Hold the lock of the run's answers (one answer at a time, whether the run is
    executing or not), waiting up to `until` for another answer to be given."""
    name = f"answers-{hashlib.sha256(run_id.encode()).hexdigest()[:32]}"
    with ExitStack() as held:
        while True:
            try:
                held.enter_context(world.lock_run(name))
                break
            except RunLocked:
                if time.monotonic() > until:
                    raise RunLocked(f"another answer to run {run_id} is being given; "
                                    "try again") from None
                time.sleep(POLL)
        yield


def _commit(world: World, run_id: str, step_path: str, value: Any, who: str | None,
            when_status: str | None) -> dict[str, Any]:
    """Check the answer against the run's open request and commit it (only while the
    run's status is `when_status`, when given)."""
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
    world.append(run_id, [NewEvent(RECEIVED, {
        "stepId": request.get("stepId"), "value": value,
        **({"respondedBy": who} if who else {})}, step_path)], when_status=when_status)
    return {"runId": run_id, "stepPath": step_path,
            "open": sorted(p for p in waiting if p != step_path)}

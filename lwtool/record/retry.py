"""`lwtool retry RUN`: what reopens a failed run (lwtool.runtime.interpreter.resume_run
with `retry=True` commits it and resumes).

The retry is a fact of the run's log: a `RunRetried` event (an lwtool extension: the
Little Workflow spec has no retry of a finished run) naming the failure it answers,
committed with the run's status back to `running`, under the run's lock, after the
checks a resume makes (capability drift, model slots) have passed. From there the run
resumes as a killed run does: the journal reads the failures before RunRetried as
history (lwtool.record.journal), so the steps that failed run again with their retry
policy afresh, and nothing that completed runs again. A retry killed mid-way resumes
with `lwtool replay`; one that fails again can be retried again.
"""

from __future__ import annotations

from typing import Any

from lwtool.world.base import Event, NewEvent, RunConflict


class NotRetryable(RunConflict):
    """The run is not a failed workflow run (completed, still running, or of another
    kind): nothing was written."""


def retry_event(run_id: str, events: list[Event], lwir: dict[str, Any]) -> NewEvent:
    """The RunRetried that reopens this failed run; NotRetryable for any other."""
    if lwir.get("kind", "Workflow") != "Workflow":
        raise NotRetryable(f"run {run_id} is a {lwir.get('kind')} run; `lwtool retry` "
                           "retries workflow runs")
    last = next((e for e in reversed(events)
                 if e.type in ("RunCompleted", "RunFailed", "RunRetried")), None)
    if last is None or last.type == "RunRetried":
        raise NotRetryable(f"run {run_id} has not failed: it is still running (or was "
                           f"interrupted); `lwtool replay {run_id}` resumes it")
    if last.type == "RunCompleted":
        raise NotRetryable(f"run {run_id} completed; there is nothing to retry")
    return NewEvent("RunRetried", {"retries": last.seq,
                                   "causeCode": last.payload.get("causeCode"),
                                   "failedStepPath": last.payload.get("failedStepPath")})

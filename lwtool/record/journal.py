"""What earlier processes committed for a run, indexed for replay.

The durable step protocol: an attempt is keyed by (run id, step path); the path holds
the branch key and the visit (`each[c1].worker.visit[2]`). If the journal has a
StepCompleted at that key, the step's result comes from the log and nothing is called;
else the step executes and its result is appended. A StepCompleted for another step id
or type at that key means the log and the LWIR disagree: NondeterminismError.
Committed model replies are kept per (step path, turn), so a step killed between
repair turns does not pay for a reply twice. A step whose failure was final (not
transient, or its retries spent) fails again from the log on replay, without being
called again: an all_settled group killed after one branch failed does not re-run it.
A `RunRetried` (`lwtool retry`) ends a failed run's failure: its final failures and its
RunFailed are history, and the failed steps run again with their attempts afresh.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwtool.canonical.digest import sha256_of_json
from lwtool.record.errors import NondeterminismError
from lwtool.world.base import Event

# What a field held before lwtool recorded it: null, no stores, the hash of no skills.
_UNRECORDED: tuple[Any, ...] = (None, [], sha256_of_json([]))


@dataclass
class Journal:
    completed: dict[str, dict[str, Any]] = field(default_factory=dict)
    completed_seq: dict[str, int] = field(default_factory=dict)  # commit position
    skipped: set[str] = field(default_factory=set)
    failed_attempts: dict[str, int] = field(default_factory=dict)
    failed_final: dict[str, dict[str, Any]] = field(default_factory=dict)  # no retry left
    replies: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    tool_calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # callId -> outcome
    tool_started: dict[str, dict[str, Any]] = field(default_factory=dict)  # callId -> call
    # session path (a worker step's path, `<path>#fix`) -> the manifest of a session
    # that started and did not end: what a resumed session is compared against
    open_sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    terminal: Event | None = None  # RunCompleted or RunFailed
    paths: set[str] = field(default_factory=set)  # every step path the log names
    # step path -> its failed attempts before the last RunRetried: a retried step gets
    # its retry policy's attempts afresh (attempt numbers go on counting)
    retry_base: dict[str, int] = field(default_factory=dict)
    # human.input: step path -> its HumanInputRequested / HumanInputReceived payload
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_events(cls, events: list[Event]) -> Journal:
        journal = cls()
        for event in events:
            path = event.step_path
            if path is not None:
                journal.paths.add(path)
            if event.type == "StepCompleted" and path is not None:
                journal.completed[path] = event.payload
                journal.completed_seq[path] = event.seq
            elif event.type == "StepSkipped" and path is not None:
                journal.skipped.add(path)
            elif event.type == "StepAttemptFailed" and path is not None:
                journal.failed_attempts[path] = journal.failed_attempts.get(path, 0) + 1
                if event.payload.get("final", not event.payload.get("transient", False)):
                    journal.failed_final[path] = event.payload
            elif event.type == "harness.model.responded" and path is not None:
                journal.replies[(path, int(event.payload.get("turn", 0)))] = event.payload
            elif event.type == "harness.tool_call.started":
                journal.tool_started[str(event.payload.get("callId"))] = event.payload
            elif event.type in ("harness.tool_call.succeeded", "harness.tool_call.failed"):
                journal.tool_calls[str(event.payload.get("callId"))] = event.payload
            elif event.type == "harness.session.started" and path is not None:
                if isinstance(event.payload.get("manifest"), dict):
                    journal.open_sessions[path] = event.payload["manifest"]
            elif event.type in ("harness.session.completed", "harness.session.failed") \
                    and path is not None:
                journal.open_sessions.pop(path, None)
            elif event.type == "HumanInputRequested" and path is not None:
                journal.requests[path] = event.payload
            elif event.type == "HumanInputReceived" and path is not None:
                journal.answers[path] = event.payload
            elif event.type in ("RunCompleted", "RunFailed"):
                journal.terminal = event
            elif event.type == "RunRetried":  # `lwtool retry`: failures before it are past
                journal.terminal = None
                journal.failed_final.clear()
                journal.retry_base = dict(journal.failed_attempts)
        return journal

    def check_session(self, run_id: str, version_id: str, path: str,
                      manifest: dict[str, Any],
                      also: dict[str, Any] | None = None) -> None:
        """A session resumed at `path` must have the manifest it started with: else
        CapabilityDriftError, before it does anything (fields an older lwtool left null,
        empty or at the empty-skills hash, from before they were recorded, are not
        compared; `also`: a value a field may have been recorded with instead, by an
        older lwtool that computed it otherwise)."""
        recorded = self.open_sessions.get(path)
        if recorded is None:
            return
        from lwtool.record.errors import CapabilityDriftError

        also = also or {}
        changed = sorted(key for key in set(recorded) | set(manifest)
                         if recorded.get(key) not in _UNRECORDED
                         and recorded.get(key) != manifest.get(key)
                         and (key not in also or recorded.get(key) != also[key]))
        if changed:
            raise CapabilityDriftError(run_id, version_id, "capability_drift",
                                       f"the session at {path} started with another "
                                       f"{', '.join(changed)}; it cannot resume as it is "
                                       "(restore what changed)")

    def recorded(self, path: str, step_id: str, uses: str) -> dict[str, Any] | None:
        payload = self.completed.get(path)
        if payload is None:
            return None
        if payload.get("stepId") != step_id or payload.get("uses") != uses:
            raise NondeterminismError(
                f"the log has step '{payload.get('stepId')}' ({payload.get('uses')}) at "
                f"{path}, but the workflow now has '{step_id}' ({uses}) there")
        return payload

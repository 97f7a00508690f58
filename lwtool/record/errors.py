"""Runtime errors and the spec's failure cause codes."""

from __future__ import annotations

from typing import Any, Literal

from lwtool.canonical.plain_json import has_lone_surrogate

CauseCode = Literal[
    "input_schema_error", "planner_validation_exhausted", "capability_drift",
    "runtime_config_error", "step_schema_error", "step_failed", "max_visits_exceeded",
    "timeout", "cancelled", "outer_loop_exhausted", "budget_exceeded",
    # lwtool's, for a provider's refusal: a prompt over the model's context window, a
    # reply its content filter stopped (lwtool.calls.provider_errors)
    "context_length_exceeded", "content_filtered",
    # lwtool's: the capability firewall refused a connection (permissions.network)
    "capability_denied",
    # lwtool's: a map step's failed items are more than its toleratedFailure
    "map_tolerance_exceeded",
    # lwtool's: an ai.agent step still called tools at its maxTurns
    "max_turns_exceeded",
]


class TransientError(Exception):
    """Raise from a tool for a failure worth retrying (rate limit, timeout, connection):
    the step's `retry` policy applies. Any other exception fails the step at once."""


def storable(text: str) -> str:
    """`text` with what UTF-8 cannot hold (lone surrogates, from a tool's message or an
    offending key) escaped as `\\udXXX`, so the failure can be logged and printed."""
    if has_lone_surrogate(text):
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class StepFailure(Exception):
    """A step attempt failed; carries the run cause code and the step path."""

    def __init__(self, cause: CauseCode, message: str, step_path: str | None = None,
                 transient: bool = False, details: dict[str, Any] | None = None) -> None:
        message = storable(message)
        super().__init__(message)
        self.cause: CauseCode = cause
        self.message = message
        self.step_path = step_path
        self.transient = transient
        self.details = details or {}


class RunFailedError(Exception):
    """A run ended in failure. Same fields as the spec's RunFailedError."""

    def __init__(self, run_id: str, workflow_version_id: str, cause_code: CauseCode,
                 message: str, failed_step_path: str | None = None,
                 result: dict[str, Any] | None = None) -> None:
        super().__init__(f"run {run_id} failed ({cause_code}"
                         f"{' at ' + failed_step_path if failed_step_path else ''}): {message}")
        self.run_id = run_id
        self.workflow_version_id = workflow_version_id
        self.cause_code: CauseCode = cause_code
        self.failed_step_path = failed_step_path
        self.message = message
        self.result = result
        self.outer_loop_id: str | None = None  # set when an outer loop failed
        self.last_cycle_output: Any = None

    def as_json(self) -> dict[str, Any]:
        document = {"runId": self.run_id, "workflowVersionId": self.workflow_version_id,
                    "status": "failed", "causeCode": self.cause_code,
                    "failedStepPath": self.failed_step_path, "message": self.message}
        if self.outer_loop_id is not None:
            document.update(outerLoopId=self.outer_loop_id,
                            lastCycleOutput=self.last_cycle_output)
        return document


class CapabilityDriftError(RunFailedError):
    """The locked version, tools or models no longer match what the run recorded."""


class WaitingForInput(Exception):
    """Steps of a scope wait for a person (`human.input` steps with no answer yet): each
    request is {stepPath, stepId, prompt, schema}. Not a failure: the scope runs what
    else it can, then passes the waits up; the run stops with status `waiting`."""

    def __init__(self, requests: list[dict[str, Any]]) -> None:
        super().__init__(", ".join(str(r.get("stepPath")) for r in requests))
        self.requests = requests


class RunWaitingError(Exception):
    """A run stopped to wait for a person: `lwtool respond RUN STEP_PATH --input FILE`
    (or `lwtool.respond`) answers a request; a replay then goes on from there."""

    def __init__(self, run_id: str, workflow_version_id: str,
                 requests: list[dict[str, Any]]) -> None:
        paths = ", ".join(str(r.get("stepPath")) for r in requests)
        super().__init__(f"run {run_id} is waiting for input at {paths}")
        self.run_id = run_id
        self.workflow_version_id = workflow_version_id
        self.requests = requests

    def as_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "workflowVersionId": self.workflow_version_id,
                "status": "waiting", "waitingFor": self.requests}


class NondeterminismError(Exception):
    """Replay found a different step at a recorded key: the log and the LWIR disagree."""

"""Harness sessions that are runs of their own: a role's agent loop (a planner drafting
LWIR, an agent answering with tools) recorded in the world like a workflow run, so
`lwtool events/report/runs/verify` show it and a killed session resumes.

The run's "version" is the session's subject (kind `HarnessSession`: role, task, model,
system prompt, prompt, turn limit), registered under its RFC 8785 hash like LWIR; its
events are RunStarted, `harness.session.started` (with the role's manifest), the turns'
`harness.model.*` and `harness.tool_call.*`, then `harness.session.completed` and
RunCompleted (or `harness.session.failed` and RunFailed). On resume the manifest is
computed again; any difference (another model, system prompt, tool set, a tool whose
schema or code changed) is CapabilityDriftError before anything is called.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.canonical.digest import workflow_version_id
from lwtool.harness.agent import DEFAULT_MAX_TURNS, AgentResult, run_agent, tool_fingerprint
from lwtool.harness.model_calls import model_label
from lwtool.harness.scripted import ScriptedModel
from lwtool.runtime.errors import CapabilityDriftError, RunFailedError, StepFailure
from lwtool.runtime.journal import Journal
from lwtool.runtime.run_state import DEFAULT_STEP_TIMEOUT, RunState, short_hash
from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent, RunNotFound, World

HARNESS_ID = "lwtool/agent-harness@1"
SESSION_KIND = "HarnessSession"
SESSION_PATH = "session"  # the events' step path: one session per run
TASKS = {"planner": "plan", "worker": "execute_step", "fixer": "fix_step",
         "orchestrator": "orchestrate", "agent": "agent"}


@dataclass(frozen=True)
class SessionSpec:
    """What a session is asked to do, and by which model."""

    role: str
    model: str | ScriptedModel
    prompt: str
    system: str = ""
    max_turns: int = DEFAULT_MAX_TURNS

    def __post_init__(self) -> None:
        if self.role not in TASKS:
            raise ValueError(f"role must be one of {', '.join(TASKS)}, not {self.role!r}")
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")

    def subject(self) -> dict[str, Any]:
        return {"kind": SESSION_KIND, "role": self.role, "task": TASKS[self.role],
                "model": model_label(self.model), "system": self.system,
                "prompt": self.prompt, "maxTurns": self.max_turns}


@dataclass
class SessionResult:
    run_id: str
    text: str
    turns: int
    tool_calls: int
    usage: dict[str, int] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "status": "completed", "output": self.text,
                "turns": self.turns, "toolCalls": self.tool_calls, "usage": self.usage}


def manifest(spec: SessionSpec, tools: ToolRegistry) -> dict[str, Any]:
    """The session's manifest (the spec's fields that apply to a session without mounts
    or skills yet: those hash as empty)."""
    return {"harnessId": HARNESS_ID, "role": spec.role, "modelSlotId": model_label(spec.model),
            "systemPromptHash": short_hash(spec.system), "skillsHash": short_hash([]),
            "allowedToolsHash": short_hash({name: tool_fingerprint(tools.tools[name])
                                            for name in tools.names()}),
            "bashCapabilitiesHash": short_hash(None), "memoryStoreIds": []}


async def run_session(world: World, spec: SessionSpec, tools: ToolRegistry | None = None,
                      run_id: str | None = None,
                      on_start: Callable[[str], None] | None = None,
                      timeout: float = DEFAULT_STEP_TIMEOUT) -> SessionResult:
    """Run the session to its final answer; an existing `run_id` resumes it (committed
    turns are fast-forwarded, the turn in flight runs again)."""
    from lwtool.runtime.interpreter import new_run_id

    registry = ToolRegistry.of(tools)
    subject = spec.subject()
    version_id = workflow_version_id(subject)
    world.register_version(version_id, subject)
    run_id = run_id or new_run_id()
    expected = manifest(spec, registry)
    with world.lock_run(run_id):
        journal = _existing(world, run_id, version_id, expected)
        if journal is None:
            journal = Journal()
            world.create_run(run_id, version_id, spec.prompt, {"session": True}, [
                NewEvent("RunStarted", {"workflowVersionId": version_id,
                                        "inputHash": short_hash(spec.prompt),
                                        "role": spec.role, "pid": os.getpid()}),
                NewEvent("harness.session.started", {
                    "runId": run_id, "role": spec.role, "task": {"kind": TASKS[spec.role]},
                    "manifest": expected, "manifestHash": short_hash(expected)},
                    SESSION_PATH)])
        if on_start:
            on_start(run_id)
        if journal.terminal is not None:
            return _finished(run_id, version_id, journal)
        state = RunState(world, run_id, version_id, subject, spec.prompt, registry, {},
                         journal, asyncio.Semaphore(world.max_concurrent_steps), timeout)
        try:
            return await _drive(state, spec, registry, timeout)
        finally:
            state.close()


def _existing(world: World, run_id: str, version_id: str,
              expected: dict[str, Any]) -> Journal | None:
    """The journal of an existing session run (None when there is none), after checking
    that it is this session and that nothing it depends on changed."""
    try:
        record = world.get_run(run_id)
    except RunNotFound:
        return None
    if record.version_id != version_id:
        raise CapabilityDriftError(run_id, record.version_id, "capability_drift",
                                   f"run {run_id} exists for another session or workflow")
    events = world.events(run_id)
    started = next((e for e in events if e.type == "harness.session.started"), None)
    recorded = (started.payload.get("manifest") if started else None) or {}
    changed = sorted(key for key in set(recorded) | set(expected)
                     if recorded.get(key) != expected.get(key))
    if changed:
        raise CapabilityDriftError(run_id, version_id, "capability_drift",
                                   "the session's manifest changed since it started: "
                                   + ", ".join(changed))
    return Journal.from_events(events)


async def _drive(state: RunState, spec: SessionSpec, tools: ToolRegistry,
                 timeout: float) -> SessionResult:
    messages = ([{"role": "system", "content": spec.system}] if spec.system else []) + [
        {"role": "user", "content": spec.prompt}]
    try:
        result: AgentResult = await run_agent(state, SESSION_PATH, spec.model, messages,
                                              tools, max_turns=spec.max_turns,
                                              timeout=timeout)
    except StepFailure as failure:
        await state.record([
            NewEvent("harness.session.failed", {"runId": state.run_id,
                                                "error": failure.message}, SESSION_PATH),
            NewEvent("RunFailed", {"causeCode": failure.cause, "failedStepPath": SESSION_PATH,
                                   "message": failure.message})], status="failed")
        raise RunFailedError(state.run_id, state.version_id, failure.cause, failure.message,
                             SESSION_PATH) from None
    summary = {"turns": result.turns, "toolCalls": result.tool_calls, "usage": result.usage}
    await state.record([
        NewEvent("harness.session.completed", {"runId": state.run_id, "output": result.text,
                                               "usage": result.usage}, SESSION_PATH),
        NewEvent("RunCompleted", {"finalStepPath": SESSION_PATH, "output": result.text,
                                  **summary})], status="completed")
    return SessionResult(state.run_id, result.text, result.turns, result.tool_calls,
                         result.usage)


def _finished(run_id: str, version_id: str, journal: Journal) -> SessionResult:
    terminal = journal.terminal
    assert terminal is not None
    payload = terminal.payload
    if terminal.type == "RunFailed":
        raise RunFailedError(run_id, version_id, payload.get("causeCode", "step_failed"),
                             str(payload.get("message", "")), payload.get("failedStepPath"))
    return SessionResult(run_id, str(payload.get("output", "")), int(payload.get("turns", 0)),
                         int(payload.get("toolCalls", 0)), dict(payload.get("usage") or {}))

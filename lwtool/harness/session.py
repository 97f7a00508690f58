"""Harness sessions that are runs of their own: a role's agent loop (a planner drafting
LWIR, an agent answering with tools) recorded in the world like a workflow run, so
`lwtool events/report/runs/verify` show it and a killed session resumes.

The run's "version" is the session's subject (kind `HarnessSession`: role, task, model,
system prompt, prompt, turn limit, and the workflow, memory, skills and bash it asked
for), registered under its RFC 8785 hash like LWIR; its events are RunStarted,
`harness.session.started` (with the role's manifest, its skills and any warnings), the
turns' `harness.model.*` and `harness.tool_call.*`, then `harness.session.completed`
and RunCompleted (or `harness.session.failed` and RunFailed). On resume the manifest is
computed again; any difference (another model, system prompt, tool set, a tool whose
schema or code changed, a skill's content, the bash sandbox or its mounts, the memory
stores) is CapabilityDriftError before anything is called.

The session sees the role's memory stores and its run scratch (lwtool.harness.stores)
through the bash tool when `bash` is given; skills are listed in its system prompt and
staged read-only at `.agents/skills/<name>/` in its working directory. Its scratch is
removed when the session ends.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.calls.agent_loop import AgentResult, run_agent
from lwtool.canonical.digest import workflow_version_id
from lwtool.harness.bash import BashUnavailable
from lwtool.harness.manifests import drift
from lwtool.harness.scratch import scratch_remover
from lwtool.harness.session_spec import HARNESS_ID, SESSION_PATH, TASKS, SessionSpec
from lwtool.harness.skills import SkillError
from lwtool.harness.workspace import Workspace, session_workspace
from lwtool.record.budget import Budget
from lwtool.record.errors import (
    CapabilityDriftError,
    RunFailedError,
    RunWaitingError,
    StepFailure,
    WaitingForInput,
)
from lwtool.record.ids import short_hash
from lwtool.record.journal import Journal
from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT, RunState
from lwtool.tools import ToolRegistry
from lwtool.world.base import DEFAULT_DURABILITY, NewEvent, RunNotFound, World


@dataclass
class SessionResult:
    run_id: str
    text: str
    turns: int
    tool_calls: int
    usage: dict[str, int] = field(default_factory=dict)
    final: Any = None

    def as_json(self) -> dict[str, Any]:
        return {"runId": self.run_id, "status": "completed", "output": self.text,
                "turns": self.turns, "toolCalls": self.tool_calls, "usage": self.usage}


async def run_session(world: World, spec: SessionSpec, tools: ToolRegistry | None = None,
                      run_id: str | None = None,
                      on_start: Callable[[str], None] | None = None,
                      timeout: float = DEFAULT_STEP_TIMEOUT,
                      finish: Callable[[str, Any], bool] | None = None) -> SessionResult:
    """Run the session to its final answer; an existing `run_id` resumes it (committed
    turns are fast-forwarded, the turn in flight runs again). `finish` ends it on a
    tool result (see lwtool.calls.agent_loop.run_agent); the result is then `final`."""
    from lwtool.record.ids import new_run_id

    subject = spec.subject()
    version_id = workflow_version_id(subject)
    world.register_version(version_id, subject)
    run_id = run_id or new_run_id()
    with world.lock_run(run_id):
        journal = _existing(world, run_id, version_id)
        try:
            space = session_workspace(world, spec, ToolRegistry.of(tools), run_id,
                                      getattr(spec.harness, "harness_id", HARNESS_ID),
                                      SESSION_PATH)
        except (SkillError, BashUnavailable, ValueError, OSError) as exc:
            # Nothing recorded: once the cause is fixed the session starts (or resumes).
            raise RunFailedError(run_id, version_id, "runtime_config_error", str(exc)) \
                from None
        if journal is None:
            journal = Journal()
            named = {"name": spec.name} if spec.name else {}
            options = {"session": True, **named,
                       **({"links": spec.links} if spec.links else {}),
                       **({"budget": spec.budget} if spec.budget else {})}
            world.create_run(run_id, version_id, spec.prompt, options, [
                NewEvent("RunStarted", {"workflowVersionId": version_id,
                                        "inputHash": short_hash(spec.prompt),
                                        "role": spec.role, "pid": os.getpid(), **named,
                                        **({"links": spec.links} if spec.links else {})}),
                NewEvent("harness.session.started", {
                    "runId": run_id, "role": spec.role, "task": {"kind": TASKS[spec.role]},
                    **({"parentRunId": spec.links["parentRunId"]}
                       if spec.links.get("parentRunId") else {}),
                    "manifest": space.manifest, "manifestHash": short_hash(space.manifest),
                    "skills": [s.listed() for s in space.skills],
                    **({"warnings": space.warnings} if space.warnings else {})},
                    SESSION_PATH)])
        else:
            _check_manifest(world, run_id, version_id, space.manifest)
            if journal.terminal is None and world.get_run(run_id).status == "waiting":
                world.append(run_id, [], status="running")  # going on
        if on_start:
            on_start(run_id)
        if journal.terminal is not None:
            if not spec.keep_scratch:  # a planner's stays for the run it planned
                space.scratch.remove()  # laid out again to compute the manifest
            return _finished(run_id, version_id, journal)
        state = RunState(world, run_id, version_id, subject, spec.prompt, space.tools, {},
                         journal, asyncio.Semaphore(world.max_concurrent_steps), timeout,
                         durability=str(getattr(world, "durability", DEFAULT_DURABILITY)))
        state.budget = _budget(world, spec, run_id)
        if not spec.keep_scratch:  # a planner's goes when the run it planned ends
            state.on_end.extend(scratch_remover(world, run_id, pipeline=spec.pipeline_run))
        try:
            return await _drive(state, spec, space, timeout, finish)
        finally:
            state.close()


def _budget(world: World, spec: SessionSpec, run_id: str) -> Budget | None:
    """The session's budget (the spec's, else the one recorded when it started), held
    against every reply under its budget root."""
    value = spec.budget if spec.budget is not None else \
        world.get_run(run_id).options.get("budget")
    budget = Budget.of(value)
    return budget.shared(world, spec.budget_root or run_id, run_id) if budget else None


def _existing(world: World, run_id: str, version_id: str) -> Journal | None:
    """The journal of an existing session run (None when there is none), after checking
    that it is this session."""
    try:
        record = world.get_run(run_id)
    except RunNotFound:
        return None
    if record.version_id != version_id:
        raise CapabilityDriftError(run_id, record.version_id, "capability_drift",
                                   f"run {run_id} exists for another session or workflow")
    return Journal.from_events(world.events(run_id))


def _check_manifest(world: World, run_id: str, version_id: str,
                    expected: dict[str, Any]) -> None:
    """Nothing the session depends on may have changed since it started."""
    started = next((e for e in world.events(run_id) if e.type == "harness.session.started"),
                   None)
    recorded = (started.payload.get("manifest") if started else None) or {}
    changed = drift(recorded, expected)
    if changed:
        raise CapabilityDriftError(run_id, version_id, "capability_drift",
                                   "the session's manifest changed since it started: "
                                   + ", ".join(changed))


async def _drive(state: RunState, spec: SessionSpec, space: Workspace, timeout: float,
                 finish: Callable[[str, Any], bool] | None) -> SessionResult:
    messages = ([{"role": "system", "content": space.system}] if space.system else []) + [
        {"role": "user", "content": spec.prompt}]
    try:
        result: AgentResult = await (
            _custom(state, spec, space) if spec.harness is not None else
            run_agent(state, SESSION_PATH, spec.model, messages, space.tools,
                      max_turns=spec.max_turns, timeout=timeout, finish=finish))
    except WaitingForInput as wait:  # a pipeline's sub-run waits for a person
        await state.record([NewEvent("RunWaiting", {"waitingFor": wait.requests})],
                           status="waiting")
        raise RunWaitingError(state.run_id, state.version_id, wait.requests) from None
    except StepFailure as failure:
        await state.record([
            NewEvent("harness.session.failed", {"runId": state.run_id,
                                                "error": failure.message}, SESSION_PATH),
            NewEvent("RunFailed", {"causeCode": failure.cause, "failedStepPath": SESSION_PATH,
                                   "message": failure.message})], status="failed")
        raise RunFailedError(state.run_id, state.version_id, failure.cause, failure.message,
                             SESSION_PATH) from None
    summary: dict[str, Any] = {"turns": result.turns, "toolCalls": result.tool_calls,
                               "usage": result.usage}
    if result.finished_by_tool:
        summary["final"] = result.final
    await state.record([
        NewEvent("harness.session.completed", {"runId": state.run_id, "output": result.text,
                                               "usage": result.usage}, SESSION_PATH),
        NewEvent("RunCompleted", {"finalStepPath": SESSION_PATH, "output": result.text,
                                  **summary})], status="completed")
    return SessionResult(state.run_id, result.text, result.turns, result.tool_calls,
                         result.usage, result.final)


async def _custom(state: RunState, spec: SessionSpec, space: Workspace) -> AgentResult:
    """The session's answer from its custom harness (`spec.harness.run(spec.task, ctx)`),
    its tool calls recorded through ctx.call."""
    from lwtool.harness.contract import HarnessContext

    ctx = HarnessContext(recorder=state, tools=space.tools, model=spec.model,
                         system=space.system, path=SESSION_PATH)
    try:
        answered = await spec.harness.run(spec.task, ctx)
    except (StepFailure, WaitingForInput):
        raise
    except Exception as exc:  # noqa: BLE001 - the harness's failure fails the session
        raise StepFailure("step_failed", f"harness {spec.harness.harness_id} failed: "
                          f"{type(exc).__name__}: {exc}", SESSION_PATH) from None
    output = getattr(answered, "output", answered)
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False,
                                                             default=str)
    calls = len(state.world.events(state.run_id, ["harness.tool_call.started"]))
    return AgentResult(text, [], 0, calls)


def _finished(run_id: str, version_id: str, journal: Journal) -> SessionResult:
    terminal = journal.terminal
    assert terminal is not None
    payload = terminal.payload
    if terminal.type == "RunFailed":
        raise RunFailedError(run_id, version_id, payload.get("causeCode", "step_failed"),
                             str(payload.get("message", "")), payload.get("failedStepPath"))
    return SessionResult(run_id, str(payload.get("output", "")), int(payload.get("turns", 0)),
                         int(payload.get("toolCalls", 0)), dict(payload.get("usage") or {}),
                         payload.get("final"))

"""Start or resume a run of a locked WorkflowVersion and drive it to RunCompleted or
RunFailed, or to RunWaiting when its human.input steps wait for a person (status
`waiting`; RunWaitingError). A resumed run rebuilds its state from the committed
events: completed steps, decisions and model replies come from the log; the step that
was in flight when the process died runs again (at-least-once), nothing before it
does."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
from collections.abc import Callable
from typing import Any

from lwtool.calls.models import check_slots
from lwtool.canonical.digest import sha256_of_bytes
from lwtool.canonical.jcs import canonical_bytes
from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.harness.run_skills import skills_drift
from lwtool.harness.scratch import scratch_remover
from lwtool.harness.workflow import DEFAULT_HARNESS_ID, WorkflowHarness
from lwtool.lock.version_record import validated_meta
from lwtool.record.budget import Budget, run_budget
from lwtool.record.errors import (
    CapabilityDriftError,
    RunFailedError,
    RunWaitingError,
    StepFailure,
    WaitingForInput,
)
from lwtool.record.ids import new_run_id, short_hash
from lwtool.record.journal import Journal
from lwtool.record.retry import retry_event
from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT, RunState
from lwtool.runtime import drift
from lwtool.runtime.children import ChildRuns, reached
from lwtool.runtime.dispatch import run_step
from lwtool.runtime.grants import run_secrets
from lwtool.runtime.needs import every_step, model_slots, needed_tools
from lwtool.runtime.scope import Scope
from lwtool.steps.outputs import OutputInvalid, check_schema
from lwtool.tools import ToolRegistry, check_tools
from lwtool.validate.invokes import child_sites
from lwtool.world.base import (
    DEFAULT_DURABILITY,
    Event,
    NewEvent,
    RunConflict,
    RunExists,
    World,
    check_durability,
    find_run,
    fsyncs,
)


def _capabilities(lwir: dict[str, Any], tools: ToolRegistry, models: dict[str, str],
                  harness: Any) -> dict[str, Any]:
    """What the run depends on outside the LWIR: the tools it may call (each one's
    fingerprint: name, description, schemas and code; False when not registered), how
    its model slots resolve and the worker harness. Recorded at start; compared on
    resume (lwtool.runtime.drift)."""
    from lwtool.harness.fingerprints import tool_fingerprint

    used = needed_tools(lwir)
    permitted = (lwir.get("permissions") or {}).get("tools") or []
    if any(step.get("uses") == "code.run" for step in every_step(lwir.get("steps") or [])):
        used.update(str(name) for name in permitted)  # its code may call any of them
    slots = (lwir.get("permissions") or {}).get("models") or []
    found = {"tools": {name: tool_fingerprint(tools.tools[name]) if name in tools.tools
                       else False for name in sorted(used)},
             "models": {slot: models.get(slot, slot) for slot in sorted(slots)},
             "harness": harness.harness_id}
    origins = {name: dict(origin) for name in sorted(used) if name in tools.tools
               and (origin := tools.tools[name].origin)}
    if origins:  # where they come from (an MCP server and its version): not compared
        found[drift.ORIGINS] = origins
    return found


async def start_run(world: World, lwir: dict[str, Any], run_input: Any, tools: ToolRegistry,
                    models: dict[str, str], run_id: str | None = None,
                    on_start: Callable[[str], None] | None = None,
                    step_timeout: float | None = None, harness: Any = None,
                    workspace: dict[str, Any] | None = None,
                    durability: str | None = None,
                    version_id: str | None = None,
                    canonical: str | None = None,
                    links: dict[str, Any] | None = None,
                    branches: Any = None,
                    budget: dict[str, Any] | None = None,
                    seed: list[NewEvent] | None = None,
                    fresh: bool = False,
                    children: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Register the version, create the run, execute it. An existing `run_id` resumes
    (`fresh`: the caller expects none, so the run is created without looking first; one
    found existing then is resumed all the same).
    `workspace` ({workflowId, memory, skills}: a definition's) is what worker steps'
    workspaces use (memory stores, skills); recorded with the run. `durability`
    (strict | process; default: the world's) is the run's for good: recorded in
    RunStarted and kept by every resume. `version_id` is the LWIR's WorkflowVersion id
    when the caller has it already (lwtool.runtime.api.LockedWorkflow): not hashed
    again; `canonical`, the RFC 8785 text it was taken over, spares the world
    canonicalizing the LWIR again to store it. `links` (plannerRunId, outerLoopId,
    cycleNumber) name the runs this one belongs with, in RunStarted. `branches`
    executes parallel branches elsewhere (RunState.branches; `lwtool worker` passes
    its queue). `budget` ({maxTokens, maxCostUsd}, lwtool.record.budget) is the run's
    for good, as its durability is (`replay --max-tokens` may change it). `seed`: step
    results committed with RunStarted, in the same commit (`lwtool fork`: the results
    kept from the run it forks); the run replays them and executes the rest.
    `children` (version id -> locked LWIR: what its workflow.invoke steps reach,
    lwtool.validate.invokes) are registered with it; a child version the world then does
    not hold is refused before anything runs."""
    harness = harness or WorkflowHarness()
    for child_id, child in (children or {}).items():  # what its invokes reach
        world.register_version(child_id, child, False,
                               meta=functools.partial(validated_meta, child, tools.tools))
    held, missing = reached(world, lwir)
    family = [lwir, *held.values()]  # before the run is written:
    check_slots(set().union(*(model_slots(d.get("steps") or []) for d in family)), models)
    check_tools(set().union(*(needed_tools(d) for d in family)), tools)
    durability = check_durability(durability or str(getattr(world, "durability",
                                                            DEFAULT_DURABILITY)))
    if version_id is None:  # the LWIR's RFC 8785 text, once for the id and the store
        data = canonical_bytes(lwir)
        version_id, canonical = sha256_of_bytes(data), data.decode("utf-8")
    try:
        run_input = to_json(run_input)
    except NotJson as exc:  # refused before anything is stored
        raise RunFailedError(run_id or "(not started)", version_id, "input_schema_error",
                             f"the run input is not JSON {exc}") from None
    # Without a flush of its own: the run's first commit follows it in the same write-
    # ahead log, and flushing that one (strict durability) flushes both.
    if missing:
        raise RunFailedError(run_id or "(not started)", version_id, "runtime_config_error",
                             f"the world holds no WorkflowVersion {', '.join(missing)} (a "
                             "child this workflow invokes): run the file that names it, "
                             "or a run that registered it, in this world first")
    secrets = run_secrets(family, run_id, version_id)  # a missing one: refused here
    world.register_version(version_id, lwir, False, canonical,
                           meta=lambda: validated_meta(lwir, tools.tools))
    run_id = run_id or new_run_id()
    existing = None if fresh else find_run(world, run_id)
    if existing is not None:
        if existing.version_id != version_id:
            raise CapabilityDriftError(run_id, existing.version_id, "capability_drift",
                                       f"run {run_id} exists for another workflow version")
        if short_hash(existing.input) != short_hash(run_input):
            raise RunConflict(f"run {run_id} exists with another input; resuming it would "
                              "not run this input (choose a new run id)")
        drift_of_skills = skills_drift(existing.options.get("workspace"), workspace)
        if drift_of_skills:
            raise CapabilityDriftError(run_id, existing.version_id, "capability_drift",
                                       f"run {run_id}: {drift_of_skills}")
        return await resume_run(world, run_id, tools, models, on_start, step_timeout, harness,
                                branches=branches, budget=budget)
    capabilities = _capabilities(lwir, tools, models, harness)
    timeout = _checked_timeout(step_timeout)
    Budget.of(budget)  # a budget it refuses (NaN, negative) is refused before anything runs
    with world.lock_run(run_id):
        options = {"models": models, "stepTimeoutS": timeout, "durability": durability,
                   **({"workspace": workspace} if workspace else {}),
                   **({"budget": budget} if budget else {}),
                   **({"links": links} if links else {})}
        started = NewEvent("RunStarted", {
            "workflowVersionId": version_id, "inputHash": short_hash(run_input),
            "capabilities": capabilities, "capabilitiesHash": short_hash(capabilities),
            "stepTimeoutS": timeout, "durability": durability,
            "stepConcurrency": {"asked": concurrency_asked(lwir.get("steps") or []),
                                "world": world.max_concurrent_steps},
            "pid": os.getpid(), **({"links": links} if links else {})})
        try:
            created = world.create_run(run_id, version_id, run_input, options,
                                       [started, *(seed or [])], fsyncs(durability))
        except RunExists:
            if not fresh:
                raise
            created = None
        if created is not None:
            if on_start:
                on_start(run_id)
            if canonical is not None:  # run what a resume will read: the stored version
                lwir = json.loads(canonical)  # (its key order shapes prompts and schemas)
            return await _execute(world, run_id, version_id, lwir, run_input, tools, models,
                                  Journal.from_events(created), timeout, harness, workspace,
                                  durability, branches, budget, links, secrets)
    # it existed after all (`fresh` was a guess): resumed, as any existing run is
    return await start_run(world, lwir, run_input, tools, models, run_id, on_start,
                           step_timeout, harness, workspace, durability, version_id,
                           canonical, links, branches, budget, seed)


def concurrency_asked(steps: list[dict[str, Any]]) -> int:
    """How many leaf steps the LWIR's parallel groups may run at once: a group's
    min(maxConcurrency, maxBranches) times what its body may (nested groups multiply);
    the largest such figure in a step list."""
    peak = 1
    for step in steps:
        if step.get("uses") != "parallel":
            continue
        with_ = step.get("with") or {}
        width = min(int(with_.get("maxConcurrency", 1)), int(with_.get("maxBranches", 100)))
        peak = max(peak, width * concurrency_asked(step.get("steps") or []))
    return peak


def _outer_loop_result(world: World, loop_id: str, version_id: str) -> dict[str, Any]:
    """An outer loop's result from its log; one that is not finished resumes from its
    definition, not from here."""
    from lwtool.runtime.loop_result import loop_result

    events = world.events(loop_id)
    terminal = next((e for e in events if e.type in ("RunCompleted", "RunFailed")), None)
    if terminal is None:
        raise RunFailedError(loop_id, version_id, "runtime_config_error",
                             f"outer loop {loop_id} did not finish; it resumes from its "
                             f"definition: lwtool run DEFINITION --run-id {loop_id}")
    cycles = [e.payload for e in events if e.type == "OuterLoopCycleCompleted"]
    return loop_result(world, loop_id, version_id, terminal, cycles)


def _checked_timeout(step_timeout: float | None) -> float:
    timeout = DEFAULT_STEP_TIMEOUT if step_timeout is None else float(step_timeout)
    if not 0 < timeout < math.inf:  # NaN fails both
        raise ValueError(f"the step timeout must be a finite number of seconds more than 0, "
                         f"not {step_timeout}")
    return timeout


async def resume_run(world: World, run_id: str, tools: ToolRegistry,
                     models: dict[str, str] | None = None,
                     on_start: Callable[[str], None] | None = None,
                     step_timeout: float | None = None, harness: Any = None,
                     accept_drift: bool = False, branches: Any = None,
                     retry: bool = False,
                     budget: dict[str, Any] | None = None) -> dict[str, Any]:
    """Finish a run from its event log (a finished run just reports its result). The
    step timeout is the one the run started with unless `step_timeout` is given. A
    change of its tools' code, models or harness is capability_drift, unless
    `accept_drift`: then the change is recorded (CapabilityDriftAccepted) and the run
    goes on with it. `retry` (`lwtool retry`): the run must have failed; once the checks
    pass, a RunRetried reopens it and its failed steps run again (lwtool.record.retry;
    NotRetryable otherwise, with nothing written)."""
    harness = harness or WorkflowHarness()
    record = world.get_run(run_id)
    if step_timeout is None:
        step_timeout = record.options.get("stepTimeoutS")
    timeout = _checked_timeout(step_timeout)
    lwir = world.get_version(record.version_id)
    if lwir is None:
        raise RunFailedError(run_id, record.version_id, "runtime_config_error",
                             f"the data dir has no WorkflowVersion {record.version_id}")
    if retry and lwir.get("kind", "Workflow") != "Workflow":
        retry_event(run_id, [], lwir)  # raises NotRetryable, naming the kind
    if lwir.get("kind") == "OuterLoop":
        return _outer_loop_result(world, run_id, record.version_id)
    if lwir.get("kind") == "HarnessSession":
        raise RunFailedError(run_id, record.version_id, "runtime_config_error",
                             f"run {run_id} is a harness session, not a workflow run; resume "
                             "it through the API that started it (lwtool.harness.session)")
    models = models if models is not None else dict(record.options.get("models") or {})
    check_slots(model_slots(lwir.get("steps") or []), models)
    if not retry and record.status in ("completed", "failed"):
        # An ended run answers from its log without its lock: the process that ended it
        # may hold the lock a moment longer (a parent woken by its child's end)
        events = world.events(run_id)
        ended = Journal.from_events(events).terminal
        if ended is not None:
            if on_start:
                on_start(run_id)
            return await _finished(world, record.version_id, lwir, ended, events)
    with world.lock_run(run_id):
        events = world.events(run_id)
        reopen = retry_event(run_id, events, lwir) if retry else None
        journal = Journal.from_events(events)
        if on_start:
            on_start(run_id)
        if journal.terminal is not None and reopen is None:
            return await _finished(world, record.version_id, lwir, journal.terminal, events)
        check_tools(needed_tools(lwir), tools)  # before anything more is written
        secrets = run_secrets([lwir, *reached(world, lwir)[0].values()], run_id,
                              record.version_id)
        current = _capabilities(lwir, tools, models, harness)
        recorded = drift.recorded_capabilities(events, DEFAULT_HARNESS_ID)
        if recorded and drift.differs(recorded, current):
            if not accept_drift:
                raise CapabilityDriftError(run_id, record.version_id, "capability_drift",
                                           drift.message(recorded, current))
            world.append(run_id, [drift.accepted(recorded, current)])
        if reopen is not None:
            events += world.append(run_id, [reopen], status="running")
            journal = Journal.from_events(events)
        elif record.status == "waiting":  # going on: answered, or to wait again
            world.append(run_id, [], status="running")
        return await _execute(world, run_id, record.version_id, lwir, record.input, tools,
                              models, journal, timeout, harness,
                              record.options.get("workspace"),
                              str(record.options.get("durability", DEFAULT_DURABILITY)),
                              branches, budget or record.options.get("budget"),
                              record.options.get("links"), secrets)


async def _execute(world: World, run_id: str, version_id: str, lwir: dict[str, Any],
                   run_input: Any, tools: ToolRegistry, models: dict[str, str],
                   journal: Journal, step_timeout: float, harness: Any,
                   workspace: dict[str, Any] | None = None,
                   durability: str = DEFAULT_DURABILITY,
                   branches: Any = None,
                   budget: dict[str, Any] | None = None,
                   links: dict[str, Any] | None = None,
                   secrets: dict[str, str] | None = None) -> dict[str, Any]:
    state = RunState(world, run_id, version_id, lwir, run_input, tools, models, journal,
                     asyncio.Semaphore(world.max_concurrent_steps), step_timeout, harness,
                     durability=check_durability(durability), branches=branches)
    state.grant_secrets(secrets or {})
    # what the run (and the runs sharing its budget) committed already
    # shared (read back from the world) when other processes or runs spend under it:
    # its branches on other workers, its children (workflow.invoke)
    invokes = any(child_sites(lwir))
    state.budget = run_budget(budget, world, run_id, links, branches is not None or invokes,
                              journal.replies.values())
    state.workspace = dict(workspace or {})
    state.parent_run_id = (links or {}).get("parentRunId")
    # a worker's runs queue their children for every worker (RunState.branches)
    queued = getattr(branches, "child_runs", None)
    state.children = (queued or ChildRuns)(state, budget, links, start_run, resume_run)
    pipeline = state.workspace.get("pipelineRunId")
    # A pipeline's planner sessions serve many sub-runs: their scratch goes with the
    # pipeline run's; a planned run's own planner session goes with it.
    planner = None if pipeline else state.workspace.get("plannerRunId")
    state.on_end.extend(scratch_remover(world, run_id, planner, pipeline=pipeline))
    try:
        # its usage counts runs it stands on (a planner session, its children), not the
        # parent a child was started by
        return await _drive(state, invokes or bool(set(links or {}) - _UP_LINKS))
    finally:
        state.close()


_UP_LINKS = {"parentRunId", "parentStepPath", "rootRunId"}  # a child's, to its parent


async def _drive(state: RunState, linked: bool) -> dict[str, Any]:
    run_id, version_id, lwir = state.run_id, state.version_id, state.lwir
    run_input, world = state.run_input, state.world
    try:
        schema = (lwir.get("input") or {}).get("schema")
        try:
            check_schema(run_input, schema, "the run input")
        except OutputInvalid as exc:
            raise StepFailure("input_schema_error", str(exc)) from None
        top = await _execute_top(state)
        final_path, output = _final_output(top)
        try:
            check_schema(output, (lwir.get("output") or {}).get("schema"), "the run output")
        except OutputInvalid as exc:
            raise StepFailure("step_schema_error", str(exc), final_path) from None
    except WaitingForInput as wait:
        raise RunWaitingError(run_id, version_id, wait.requests) from None
    except StepFailure as failure:
        await state.record([NewEvent("RunFailed", {
            "causeCode": failure.cause, "failedStepPath": failure.step_path,
            "message": failure.message, **failure.details})], status="failed")
        raise RunFailedError(run_id, version_id, failure.cause, failure.message,
                             failure.step_path) from None
    if final_path is not None and top.steps[top.last_step].get("sensitive") is True:
        state.sensitive_paths.add("")  # the run's output is that step's value: sealed too
    envelope, inline = await state.envelope(output, "workflow", None,
                                            "" if "" in state.sensitive_paths else None)
    await state.record([NewEvent("RunCompleted", {"finalStepPath": final_path,
                                                  "envelope": envelope})],
                       status="completed", artifacts=inline)
    # No model reply in its log (none before, none now, no other process's branches)
    # and no linked run: its usage is known without reading the log back.
    calls = bool(linked or state.replies or state.journal.replies or state.branched)
    return await result_of(world, run_id, version_id, output, state.artifacts, calls)


async def _execute_top(state: RunState) -> Scope:
    """Execute the run's steps; the top scope once nothing is left to run. Steps that
    wait for a person let the rest run first; then, before the run stops with status
    `waiting` (RunWaiting; WaitingForInput raised), answers given meanwhile (`lwtool
    respond` to a run that is executing) are looked for: with one, the steps execute
    again from the log (what committed comes back from it, nothing is called again).
    The look is repeated once the status is `waiting`: an answer commits only while
    the run is `running`, so each one is either seen here or refused and given to the
    waiting run."""
    steps = state.lwir.get("steps") or []
    while True:
        top = Scope(state, steps, "", run_step)
        try:
            await top.execute()
            return top
        except WaitingForInput as wait:
            if not _answered_meanwhile(state, wait.requests):
                await state.record([NewEvent("RunWaiting", {"waitingFor": wait.requests})],
                                   status="waiting")
                if not _answered_meanwhile(state, wait.requests):
                    raise
                await state.record([], status="running")


def _answered_meanwhile(state: RunState, requests: list[dict[str, Any]]) -> bool:
    """Whether an answer to one of `requests` is in the log now; if so the run's
    journal is read again from it."""
    from lwtool.runtime.answers import answers_of, paths_of

    return answers_of(state).read(paths_of(requests, state.run_id))


def _final_output(top: Scope) -> tuple[str | None, Any]:
    """The output of the last top-level non-decision step to complete, in commit order
    (the fan-in array when that is a parallel step)."""
    sid = top.last_step
    if sid is None:
        return None, None
    return top.path_of(sid, top.visits[sid] - 1), top.outputs[sid][-1]


async def ended_output(world: World, run_id: str, version_id: str,
                       lwir: dict[str, Any]) -> tuple[bool, Any]:
    """(True, its output) of a run that ended, from its log, without its lock or its
    usage (a parent awaiting its child wants the output alone); RunFailedError for
    one that failed; (False, None) for one that has not ended (or was reopened)."""
    ends = world.events(run_id, ["RunCompleted", "RunFailed", "RunRetried"])
    if not ends or ends[-1].type == "RunRetried":
        return False, None
    return True, await _ended_value(world, version_id, lwir, ends[-1])


async def _ended_value(world: World, version_id: str, lwir: dict[str, Any],
                       terminal: Event) -> Any:
    """The output of a run's terminal event; RunFailedError when it failed."""
    if terminal.type == "RunFailed":
        payload = terminal.payload
        raise RunFailedError(terminal.run_id, version_id, payload.get("causeCode", "step_failed"),
                             payload.get("message", ""), payload.get("failedStepPath"))
    state = RunState(world, terminal.run_id, version_id, lwir, None, ToolRegistry(), {},
                     Journal(), asyncio.Semaphore(1))
    try:
        # A finished run's result is read from its artifact: a damaged store shows.
        return await state.output_of(terminal.payload, from_artifact=True)
    finally:
        state.close()


async def _finished(world: World, version_id: str, lwir: dict[str, Any], terminal: Event,
                    events: list[Event]) -> dict[str, Any]:
    output = await _ended_value(world, version_id, lwir, terminal)
    refs = sorted({ref for e in events
                   if e.type in ("StepCompleted", "RunCompleted") and "envelope" in e.payload
                   for ref in (e.payload["envelope"]["outputRef"],
                               *e.payload["envelope"].get("artifacts", []))})
    return await result_of(world, terminal.run_id, version_id, output, refs)


async def result_of(world: World, run_id: str, version_id: str, output: Any,
                    artifacts: list[str], calls: bool = True) -> dict[str, Any]:
    """A completed run's result. Its usage is read from its log (and its linked runs'),
    unless `calls` is False: the caller knows it made no model call and links no run."""
    from lwtool.record.rollup import no_calls_total, rolled_usage

    usage = rolled_usage(world, run_id)["total"] if calls else no_calls_total()
    return {"runId": run_id, "workflowVersionId": version_id, "status": "completed",
            "output": output, "usage": usage, "artifacts": sorted(set(artifacts))}

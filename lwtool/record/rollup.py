"""A run's usage and cost with the runs it stands on, per role: a planned run counts
its planner session (RunStarted `links.plannerRunId`), an outer loop its cycles (each a
planned run) and its supervising model's calls (recorded in OuterLoopCycleCompleted),
a pipeline run its sub-runs and their planner sessions (the ids its tool calls
reserved). Roles: `worker` (the steps' model calls), `planner`, `supervisor`,
`orchestrator`, `agent` (a standalone session)."""

from __future__ import annotations

from typing import Any

from lwtool.record.ids import child_run_id, reserved_ids
from lwtool.record.report import (
    add_usage,
    empty_totals,
    merge_totals,
    price,
    usage_report,
)
from lwtool.world.base import RunNotFound, World, find_run

ROLES = ("worker", "planner", "supervisor", "orchestrator", "agent")
_TOOL_STARTED = "harness.tool_call.started"


def linked(world: World, run_id: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    """(role, run id) of the run and every run it stands on, and the supervising model's
    calls of an outer loop ({model, usage})."""
    try:
        events = world.events(run_id, ["RunStarted", "OuterLoopCycleCompleted"])
    except RunNotFound:
        return [], []
    started = next((e for e in events if e.type == "RunStarted"), None)
    links = (started.payload.get("links") or {}) if started is not None else {}
    runs: list[tuple[str, str]] = []
    calls: list[dict[str, Any]] = []
    cycles = [e.payload for e in events if e.type == "OuterLoopCycleCompleted"]
    if started is not None and "maxCycles" in started.payload:  # an outer loop
        for cycle in cycles:
            inner, _ = linked(world, str(cycle.get("runId")))
            runs += inner
            if isinstance(cycle.get("supervisorCall"), dict):
                calls.append(cycle["supervisorCall"])
        return runs, calls
    role = started.payload.get("role") if started is not None else None
    if role == "orchestrator":
        return _pipeline(world, run_id), calls
    runs.append((role if role in ROLES else "worker", run_id))
    if isinstance(links.get("plannerRunId"), str):
        runs.append(("planner", links["plannerRunId"]))
    for child in child_runs(world, run_id):
        runs += linked(world, child)[0]
    return runs, calls


def child_run_states(world: World, run_id: str) -> list[dict[str, str]]:
    """A run's child runs (workflow.invoke) as the inspector lists them: {runId,
    workflow (its name), status (`interrupted` for one no process executes)}."""
    from lwtool.record.names import run_name
    from lwtool.world.base import shown_status

    states = []
    for child in child_runs(world, run_id):
        record = world.get_run(child)
        states.append({"runId": child,
                       "workflow": run_name(world.get_version(record.version_id), None),
                       "status": shown_status(world, child, record.status)})
    return states


def child_runs(world: World, run_id: str) -> list[str]:
    """The child runs a run's workflow.invoke steps started, in the order they started
    (ids derived from the step paths, record.ids.child_run_id)."""
    found: list[str] = []
    # an invoke's execute_step.started names its child (a payload of a few ids; the
    # attempt's StepAttemptStarted would bring its whole input along)
    for event in world.events(run_id, ["harness.execute_step.started"]):
        child = event.payload.get("childRunId")
        if child and event.step_path and child == child_run_id(run_id, event.step_path) \
                and child not in found and find_run(world, child) is not None:
            found.append(child)
    return found


def _pipeline(world: World, run_id: str) -> list[tuple[str, str]]:
    """A pipeline run, the planner sessions and sub-runs its calls reserved, in order."""
    runs = [("orchestrator", run_id)]
    for event in world.events(run_id, [_TOOL_STARTED]):
        ids = reserved_ids(run_id, event.payload)
        for key, role in (("plannerRunId", "planner"), ("subRunId", "worker")):
            found = ids.get(key)
            if not isinstance(found, str) or find_run(world, found) is None:
                continue  # a fixed plan reserved a planner run it never made
            # a sub-run with what it stands on (a nested pipeline: its whole tree)
            for linked_run in (linked(world, found)[0] if role == "worker"
                               else [(role, found)]):
                if linked_run not in runs and (linked_run[1] == found or find_run(
                        world, linked_run[1]) is not None):
                    runs.append(linked_run)
    return runs


def replies_under(world: World, root: str, own: str) -> list[dict[str, Any]]:
    """The committed `harness.model.responded` payloads of `root`, every run it stands
    on, and `own` (a run of it that `root` does not name yet: a planner session whose
    run has not started)."""
    runs = [linked_id for _, linked_id in linked(world, root)[0]]
    if own not in runs:
        runs.append(own)
    replies: list[dict[str, Any]] = []
    for linked_id in runs:
        try:
            replies += [e.payload for e in world.events(linked_id, ["harness.model.responded"])]
        except RunNotFound:
            continue
    return replies


def no_calls_total() -> dict[str, Any]:
    """`rolled_usage(...)["total"]` of a run that links no other run and made no model
    call (costUsd 0: nothing to pay), without reading its log."""
    total = empty_totals()
    total["costUsd"] = 0.0
    return total


def rolled_usage(world: World, run_id: str) -> dict[str, Any]:
    """{total, byRole: {role: totals}, runs: [{runId, role, usage}]}."""
    runs, calls = linked(world, run_id)
    total = empty_totals()
    by_role = {role: empty_totals() for role in ROLES}
    rows = []
    any_call = False
    for role, linked_id in runs:
        try:
            events = world.events(linked_id, ["harness.model.responded"])
        except RunNotFound:
            continue
        any_call = any_call or bool(events)
        usage = usage_report(events)["run"]
        merge_totals(total, usage)
        merge_totals(by_role[role], usage)
        rows.append({"runId": linked_id, "role": role, "usage": usage})
    for call in calls:
        any_call = True
        model = call.get("model") or {}
        usage = call.get("usage") or {}
        cost = price(str(model.get("provider", "")), str(model.get("modelId", "")), usage)
        add_usage(total, usage, cost)
        add_usage(by_role["supervisor"], usage, cost)
    if not any_call:
        total["costUsd"] = 0.0
    return {"total": total, "byRole": {r: t for r, t in by_role.items()
                                       if t["pricedCalls"] + t["unpricedCalls"]},
            "runs": rows}

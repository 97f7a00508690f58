"""`lwtool fork RUN --from STEP`: a new run of the same WorkflowVersion that keeps the
results of every step that does not depend on STEP, and runs STEP and everything
downstream of it again (with a new input where given). The original run's log is
never touched.

Downstream is read from the graph, not from time: the top-level steps that need STEP,
directly or through others, and the targets of decisions among them (a loop STEP is on
runs again as a whole). The kept results are the original's StepCompleted and
StepSkipped events of the other top-level steps (with everything inside them: branches
and loop visits), committed with the new run's RunStarted in one commit, whose `links`
say `forkedFromRunId` and `forkedFromStep`. The fork then runs like any run: a kill
mid-way resumes with `lwtool replay NEW`. Kept steps cost the fork nothing: their model
calls stay in the original's log (`lwtool report` of the fork counts only its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lwtool.record.ids import new_run_id
from lwtool.runtime.interpreter import start_run
from lwtool.runtime.scope import closure, decision_targets, dependents_of
from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent, RunConflict, World

SAME_INPUT: Any = object()  # fork_run's default: the original run's input


class ForkRefused(RunConflict):
    """The fork cannot be made as asked (an unknown step, a run of another kind): nothing
    was written."""


def top_step(path: str) -> str:
    """The top-level step id a step path belongs to (`each[k].work` -> `each`)."""
    end = len(path)
    for mark in (".", "["):
        at = path.find(mark)
        if at != -1:
            end = min(end, at)
    return path[:end]


def downstream(steps: list[dict[str, Any]], start: str) -> set[str]:
    """`start` and every top-level step that depends on it: needs, and the targets of
    decisions reached that way (the scheduler's own graph: lwtool.runtime.scope)."""
    by_id = {s["id"]: s for s in steps}
    edges = dependents_of(by_id)
    for sid, step in by_id.items():
        if step.get("uses") == "decision":
            edges[sid] |= {t for t in decision_targets(step) if t in edges}
    return closure(start, edges)


async def fork_run(world: World, run_id: str, step: str, tools: ToolRegistry,
                   models: dict[str, str] | None = None, run_input: Any = SAME_INPUT,
                   new_id: str | None = None, on_start: Callable[[str], None] | None = None,
                   step_timeout: float | None = None, harness: Any = None) -> dict[str, Any]:
    """Fork `run_id` from `step` (a top-level step id) and run the fork to its end;
    ForkRefused, with nothing written, when it cannot be made: a path inside a step (a
    branch, a loop visit) is refused naming its top-level step, as a fork runs whole
    top-level steps again, never part of one."""
    record = world.get_run(run_id)  # RunNotFound for an unknown id
    lwir = world.get_version(record.version_id) or {}
    if lwir.get("kind", "Workflow") != "Workflow":
        raise ForkRefused(f"run {run_id} is a {lwir.get('kind')} run; `lwtool fork` forks "
                          "workflow runs")
    steps = lwir.get("steps") or []
    start = top_step(step)
    if start not in {s["id"] for s in steps}:
        known = ", ".join(s["id"] for s in steps)
        raise ForkRefused(f"run {run_id}'s workflow has no top-level step '{start}' "
                          f"(its steps: {known})")
    if step != start:
        raise ForkRefused(f"'{step}' is a part of the top-level step '{start}' (a branch or "
                          "a loop visit); a fork runs whole top-level steps again: fork "
                          f"from '{start}' to run it, all of it, and what follows again")
    rerun = downstream(steps, start)
    kept = [NewEvent(e.type, e.payload, e.step_path) for e in world.events(run_id)
            if e.type in ("StepCompleted", "StepSkipped") and e.step_path
            and top_step(e.step_path) not in rerun]
    options = record.options
    return await start_run(
        world, lwir, record.input if run_input is SAME_INPUT else run_input, tools,
        {**dict(options.get("models") or {}), **(models or {})}, new_id or new_run_id(),
        on_start, step_timeout if step_timeout is not None else options.get("stepTimeoutS"),
        harness, options.get("workspace"), str(options.get("durability") or "strict"),
        version_id=record.version_id,
        links={"forkedFromRunId": run_id, "forkedFromStep": start},
        budget=options.get("budget"), seed=kept)

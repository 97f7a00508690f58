"""The scheduler's power to start and await child runs, given to the step executors
that start runs (workflow.invoke) through `RunState.children`.

A child run's id is `record.ids.child_run_id(parent, step path)`; starting it again (a
replay after a kill at any point, a retry) resumes that run from its log, and a
finished child answers from its log: one child per invoke. The child runs the exact
version the parent's locked LWIR names (which the world must hold), with the parent's
tools, models, harness, durability and step timeout; it may reach only what the parent
may (its `permissions` and its descendants' within the parent's); its model calls count
against the budget of the run at the top (`links.rootRunId`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lwtool.calls.models import UnresolvedModel
from lwtool.record.errors import (
    CapabilityDriftError,
    RunFailedError,
    RunWaitingError,
    StepFailure,
    WaitingForInput,
)
from lwtool.record.ids import child_run_id
from lwtool.tools import MissingTools
from lwtool.validate.invokes import wider_grants
from lwtool.world.base import RunConflict


class ChildRuns:
    """`start` and `resume`: the scheduler's start_run and resume_run (given, so that
    this module imports nothing of the scheduler that imports it)."""

    def __init__(self, state: Any, budget: dict[str, Any] | None,
                 links: dict[str, Any] | None, start: Callable[..., Any],
                 resume: Callable[..., Any]) -> None:
        self.state, self.budget = state, budget
        self.start, self.resume = start, resume
        self.root = str((links or {}).get("rootRunId") or state.run_id)
        self._versions: dict[str, dict[str, Any]] = {}  # child versions checked

    def _checked(self, version_id: str, path: str) -> dict[str, Any]:
        """The child version's LWIR, once found within this run's grants (a map's
        shards all run one version: it is read and checked once)."""
        state = self.state
        lwir = self._versions.get(version_id)
        if lwir is not None:
            return lwir
        lwir = state.world.get_version(version_id)
        if not isinstance(lwir, dict):
            raise StepFailure("runtime_config_error", f"the world holds no WorkflowVersion "
                              f"{version_id} (the child this step invokes)", path)
        wider = wider_grants(state.lwir, lwir, reached(state.world, lwir)[0])
        if wider:
            names = "; ".join(f"{kind}: {', '.join(found)}" for kind, found in wider.items())
            raise StepFailure("capability_drift", f"child workflow {version_id} reaches what "
                              f"this workflow's permissions do not grant ({names})", path)
        self._versions[version_id] = lwir
        return lwir

    def child_id(self, path: str) -> str:
        """The id of the child run started at `path` (an invoke's, a map shard's)."""
        return child_run_id(self.state.run_id, path)

    async def invoke(self, version_id: str, value: Any, path: str, again: bool = True) -> Any:
        """The child run's output; StepFailure with the child's cause when it failed,
        WaitingForInput (naming the child run) while it waits for a person. A child
        that failed before runs again (retried) when `again` (the parent's step runs
        again after it failed); else it answers with its failure (a map's tolerated
        shard, replayed)."""
        state = self.state
        child_id = child_run_id(state.run_id, path)
        lwir = self._checked(version_id, path)
        links = {"parentRunId": state.run_id, "parentStepPath": path,
                 "rootRunId": self.root}
        try:
            if again and _failed(state.world, child_id):
                # The step runs again after its child failed: the parent was retried
                # (`lwtool retry`), and so is the child (its failed steps, then on).
                result = await self.resume(state.world, child_id, state.tools, state.models,
                                           harness=state.harness, retry=True)
            else:
                result = await self.run_child(child_id, lwir, version_id, value, links)
        except RunWaitingError as waiting:
            raise WaitingForInput([{**r, "runId": child_id} for r in waiting.requests]) \
                from None
        except (MissingTools, UnresolvedModel, RunConflict, CapabilityDriftError) as exc:
            raise StepFailure("runtime_config_error", f"child run {child_id} cannot run: "
                              f"{exc}", path) from None
        except RunFailedError as failed:
            where = f" at {failed.failed_step_path}" if failed.failed_step_path else ""
            raise StepFailure(failed.cause_code, f"child run {child_id} failed{where}: "
                              f"{failed.message}", path,
                              details={"childRunId": child_id,
                                       "childFailedStepPath": failed.failed_step_path}) \
                from None
        return result["output"]

    async def run_child(self, child_id: str, lwir: dict[str, Any], version_id: str,
                        value: Any, links: dict[str, Any]) -> dict[str, Any]:
        """Start (or resume) the child and await its result, here, in this process
        (lwtool.runtime.queued_children queues it for the workers instead)."""
        state = self.state
        result: dict[str, Any] = await self.start(
            state.world, lwir, value, state.tools, state.models, child_id,
            step_timeout=state.step_timeout, harness=state.harness,
            durability=state.durability, version_id=version_id, links=links,
            budget=self.budget)
        return result


def _failed(world: Any, run_id: str) -> bool:
    from lwtool.world.base import find_run

    record = find_run(world, run_id)
    return record is not None and record.status == "failed"


def descendants(world: Any, lwir: dict[str, Any]) -> list[dict[str, Any]]:
    """The child versions `lwir` reaches through invokes that the world holds."""
    return list(reached(world, lwir)[0].values())


def reached(world: Any, lwir: dict[str, Any]
            ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The versions `lwir`'s invokes name, recursively: those the world holds (id ->
    LWIR), and the ids of those it does not, in one walk."""
    from lwtool.validate.invokes import child_ref, child_sites

    found: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    todo = [lwir]
    while todo:
        for _, holder in child_sites(todo.pop()):
            ref = child_ref(holder)
            if ref is None or ref in found or ref in missing:
                continue
            child = world.get_version(ref)
            if child is None:
                missing.append(ref)
            else:
                found[ref] = child
                todo.append(child)
    return found, missing

"""A worker's child runs (workflow.invoke under `lwtool worker`): queued for every
worker, and awaited.

A child is queued on its parent's queue, needing its own tools and model slots (and
its descendants'); any worker that serves them may claim it, as it claims a run. The
parent waits for the child's end, woken by the NOTIFY that ends the child's claim
(lwtool.runtime.child_ends), then looking at its record (or after FALLBACK). A child
still queued after HERE_AFTER seconds (no other worker took it), or claimed by a worker
that is gone, is claimed by the parent's own worker and executed in the slot the
waiting parent lends it: a single worker with one slot never waits for itself. A child
that ended answers from its log: its output, its failure, or the requests it waits on.
Whoever is killed when, the child is one run, resumed from its own log by whichever
worker claims it next."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from lwtool.record.errors import WaitingForInput
from lwtool.runtime.child_ends import FALLBACK, heard_or_after
from lwtool.runtime.children import ChildRuns
from lwtool.world.base import RunConflict, find_run

HERE_AFTER = 0.5  # seconds a queued child waits for another worker before this one


class QueuedChildRuns(ChildRuns):
    """`worker`: the lwtool.runtime.worker._Worker executing the parent; `queue`: the
    parent's queue."""

    def __init__(self, state: Any, budget: dict[str, Any] | None,
                 links: dict[str, Any] | None, start: Any, resume: Any, worker: Any,
                 queue: str) -> None:
        super().__init__(state, budget, links, start, resume)
        self.worker, self.queue = worker, queue

    async def run_child(self, child_id: str, lwir: dict[str, Any], version_id: str,
                        value: Any, links: dict[str, Any]) -> dict[str, Any]:
        from lwtool.runtime.interpreter import ended_output

        world, queue = self.state.world, self.worker.queue
        # listening before it is queued: its end cannot come before the ear
        with self.worker.run_ends.waiting(child_id) as ended:
            await asyncio.to_thread(self._enqueue, child_id, lwir, version_id, value, links)
            asked = time.monotonic()
            while True:
                ended.clear()  # an end after this look wakes the wait below
                record = await asyncio.to_thread(find_run, world, child_id)
                if record is not None and record.status == "waiting":
                    raise WaitingForInput(await asyncio.to_thread(_requests, world,
                                                                  child_id))
                if record is not None and record.status in ("completed", "failed"):
                    # its end from its log (a failure is raised as the child's)
                    done, output = await ended_output(world, child_id, version_id, lwir)
                    if done:
                        return {"output": output}
                    return await super().run_child(child_id, lwir, version_id, value, links)
                waited = time.monotonic() - asked
                if waited >= HERE_AFTER:
                    claim = await asyncio.to_thread(queue.claim_run, child_id,
                                                    self.worker.setup.name,
                                                    self.worker.setup.lease)
                    if claim is not None:
                        await self.worker.execute_here(claim, self.state.run_id)
                        continue
                    await heard_or_after(ended, FALLBACK)
                else:
                    await heard_or_after(ended, HERE_AFTER - waited)

    def _enqueue(self, child_id: str, lwir: dict[str, Any], version_id: str, value: Any,
                 links: dict[str, Any]) -> None:
        """Queue the child unless the queue holds it, or it ended before (a replay)."""
        from lwtool.runtime.children import descendants
        from lwtool.runtime.needs import run_needs

        world, state, queue = self.state.world, self.state, self.worker.queue
        record = find_run(world, child_id)
        if queue.state_of(child_id) is not None or (
                record is not None and record.status in ("completed", "failed", "waiting")):
            return
        options = {"models": dict(state.models), "durability": state.durability,
                   "stepTimeoutS": state.step_timeout, "links": links,
                   **({"budget": self.budget} if self.budget else {})}
        try:
            queue.enqueue(child_id, version_id, value, options,
                          run_needs(lwir, state.models, descendants(world, lwir)), self.queue)
        except RunConflict:  # queued meanwhile (a resumed parent's other try)
            pass


def _requests(world: Any, run_id: str) -> list[dict[str, Any]]:
    """What a waiting child waits for, each naming the child."""
    from lwtool.steps.human_input import open_requests

    return [{**r, "runId": run_id} for r in open_requests(world.events(run_id))]

"""The branches of a run a worker owns: queued for every worker, and executed by the
owner itself as often as it has a free branch slot (`lwtool worker`).

Each parallel group's branches are asked for on the run's own loop (`OwnBranches.run`).
A pump gathers what the run's branches need of the queue into one statement
(BranchQueue.pump): the branches asked for since the last one are queued, as many as
the worker has free slots for are claimed for it at once (the oldest of the run's own
queued ones first), and the ends of the branches it executed are written. A branch
claimed this way executes as a task on the run's loop, in the run's own state, as in
one process: no state of its own to set up, its commits grouped with the run's other
branches', its end handed to the run directly. AHEAD more than the slots are claimed
(more for quick branches: `OwnBranches.ahead`) and start as the run's branches end, so
a claim statement serves several ends; the ends of the last ones, with no claim due,
are written together a moment later (WRITE_AFTER). The worker's other claims leave this
worker's runs to their owners (`BranchQueue.claim(besides=...)`); other workers claim
what the owner has no slot for, and their ends reach the run through `BranchEnds`.
A branch executed by someone before (its claims > 1) is executed from the run's log,
as another worker does (`execute_branch`). A slot freed anywhere in the worker sets
every run waiting for one pumping again; one that gets no slot makes no statement.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from lwtool.runtime.branches import branch_end, branch_outcome, branch_request, execute_branch
from lwtool.runtime.own_loop import soon
from lwtool.world.base import WorldError

LOOK_AGAIN = 1.0  # seconds between looks at the run's branches other workers hold
# seconds an end waits to be written when no claim is due: the ends of a group's last
# branches go in one statement, not one each (a claim due sooner carries them)
WRITE_AFTER = 0.1
# branches of a run claimed beyond its slots, each started as one of the run's branches
# ends: one claim statement for every AHEAD + 1 branch ends, not one each. Quick
# branches claim more ahead, about CLAIM_AHEAD_S seconds of their work (AHEAD_MOST at
# most): a claim statement costs more than a branch of a few milliseconds, and other
# workers wait at most that long for what the owner claimed ahead.
AHEAD, AHEAD_MOST, CLAIM_AHEAD_S = 2, 16, 0.05


class BranchSlots:
    """A worker's `total` branch slots, taken and given back from any thread; each
    give calls the listeners (the worker's loop, runs waiting for a slot)."""

    def __init__(self, total: int) -> None:
        self.total, self.used = total, 0
        self._guard = threading.Lock()
        self._listeners: dict[int, Callable[[], None]] = {}

    def take(self, most: int) -> int:
        """Up to `most` free slots, taken; how many."""
        with self._guard:
            taken = max(0, min(most, self.total - self.used))
            self.used += taken
            return taken

    def give(self, count: int = 1) -> None:
        if count <= 0:
            return
        with self._guard:
            self.used -= count
            listeners = list(self._listeners.values())
        for listener in listeners:
            listener()

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener` whenever slots are given back; the returned call stops it."""
        key = id(listener)
        with self._guard:
            self._listeners[key] = listener

        def stop() -> None:
            with self._guard:
                self._listeners.pop(key, None)

        return stop


class _Branch:
    """A branch the run asked for: `new` (not queued yet), `queued` (any worker may
    claim it; its end is watched for), `elsewhere` (queued, and another worker held it
    at the last look), `here` (executing on the run's loop)."""

    __slots__ = ("request", "here", "ended", "state", "task", "withdrawn")

    def __init__(self, request: tuple[Any, ...], here: Any,
                 ended: asyncio.Future[tuple[str, Any]]) -> None:
        self.request, self.here, self.ended = request, here, ended
        self.state = "new"
        self.task: asyncio.Task[None] | None = None
        self.withdrawn = False  # the run stopped waiting for it (fail_fast)

    @property
    def prefix(self) -> str:
        return str(self.request[1])


class OwnBranches:
    """`RunState.branches` for one run a worker executes (its claims, ends, slots and
    heartbeat: `worker`, lwtool.runtime.worker._Worker)."""

    def __init__(self, worker: Any, run_id: str, queue: str = "default") -> None:
        self.worker, self.run_id, self.queue = worker, run_id, queue
        self.loop: asyncio.AbstractEventLoop | None = None
        self.state: Any = None  # the run's RunState
        self.branches: dict[str, _Branch] = {}
        self.ends: list[dict[str, Any]] = []  # ended here, to write
        self.kept = 0  # slots kept for the run's next branches
        self.ready: list[asyncio.Future[None]] = []  # claimed branches waiting for a slot
        self._pump_due = False
        self._must = False  # a pump is due whatever it gets (not only a slot offered)
        self._stop_listening: Callable[[], None] | None = None
        self._look: asyncio.TimerHandle | None = None
        self._write_due: asyncio.TimerHandle | None = None
        self.took: float | None = None  # seconds a branch executed here took, smoothed

    def child_runs(self, state: Any, budget: Any, links: Any, start: Any,
                   resume: Any) -> Any:
        """The run's child runs (workflow.invoke): queued for every worker on the run's
        queue, and executed here when no other worker takes them
        (lwtool.runtime.queued_children)."""
        from lwtool.runtime.queued_children import QueuedChildRuns

        return QueuedChildRuns(state, budget, links, start, resume, self.worker, self.queue)

    async def run(self, scope: Any, step: dict[str, Any], path: str, key: str,
                  item: Any, here: Callable[[], Coroutine[Any, Any, Any]] | None = None
                  ) -> Any:
        request = branch_request(scope, step, path, key, item)
        self.state, self.loop = scope.run, asyncio.get_running_loop()
        branch = _Branch(request, here, self.loop.create_future())
        self.branches[branch.prefix] = branch
        self._pump_soon()
        try:
            state, result = await branch.ended
        except asyncio.CancelledError:
            self._withdraw(branch)
            raise
        finally:
            if self.branches.get(branch.prefix) is branch:
                del self.branches[branch.prefix]
        return branch_outcome(state, result)

    # -- the pump: one statement for what the run's branches need of the queue ----------

    def _pump_soon(self, offered: bool = False) -> None:
        """Pump once the loop has run what is ready (a group's branches ask together);
        `offered`: only a slot was given back in the worker, worth a statement if this
        run gets it."""
        self._must = self._must or not offered
        if not self._pump_due and self.loop is not None:
            self._pump_due = True
            self.loop.call_soon(self._pump)

    def _pump(self) -> None:
        self._pump_due = False
        fresh = [b for b in self.branches.values() if b.state == "new"]
        queued = [b for b in self.branches.values() if b.state == "queued"]
        slots = self.worker.slots
        wanted, held = len(self.ready) + len(fresh) + len(queued), self.kept
        taken = slots.take(wanted - held) if wanted > held else 0
        if not taken and not self._must:  # a slot offered went to another run
            if self.ends:
                self._write_later()
            return
        self._must, held = False, held + taken
        slots.give(held - wanted)
        held, self.kept = min(held, wanted), 0
        while held and self.ready:  # slots go to branches claimed already first
            waiting = self.ready.pop(0)
            if not waiting.done():  # (one done was cancelled: its task is unwinding)
                held -= 1
                waiting.set_result(None)
        # claimed: one a slot, and AHEAD more that start as the run's branches end; none
        # while none executes here (no end to start them at: they wait for a slot, and
        # so may any worker's)
        executing = sum(b.state == "here" for b in self.branches.values()) - len(self.ready)
        room = 0 if not held and executing <= 0 else \
            max(0, min(len(fresh) + len(queued), held + self.ahead() - len(self.ready)))
        ends, self.ends = self.ends, []
        if not fresh and not ends and not room:
            slots.give(held)
            self._listen_for_slots()
            return
        asked = {b.prefix for b in fresh}
        if any(end["prefix"] in asked for end in ends):  # asked again (a wait answered):
            self._write(ends)  # its end first, or the statement would queue it ended
            ends = []
        steal = min(room, len(queued))  # the oldest first: those queued before
        mine = {b.prefix for b in fresh[:room - steal]}
        for branch in fresh:
            branch.state = "queued"
        worker = self.worker
        try:
            tasks = worker.branch_queue.pump(
                self.run_id, worker.setup.name, worker.setup.lease, ends,
                [(*b.request[1:5], b.request[5], b.prefix in mine) for b in fresh],
                [b.prefix for b in queued], steal)
        except WorldError as exc:  # the server away: what was asked for fails with it
            slots.give(held)
            self.ends[:0] = ends  # written at a later pump, or the claims run out
            for branch in fresh:
                if not branch.ended.done():
                    branch.ended.set_exception(exc)
            return
        claimed = {task.prefix for task in tasks}
        if sum(b.prefix in claimed for b in queued) < steal:  # the rest: others' now
            for branch in queued:
                if branch.prefix not in claimed:
                    branch.state = "elsewhere"
            self._look_again_later()
        if any(b.prefix in claimed for b in queued):  # no longer anyone else's to end
            worker.ends.unwatch(self.run_id, [b.prefix for b in queued
                                              if b.prefix in claimed])
        started, loop = 0, asyncio.get_running_loop()
        for task in tasks:
            found = self.branches.get(task.prefix)
            if found is None:  # not waited for any more: nothing executes it
                self.ends.append({"prefix": task.prefix, "state": "cancelled", "result": None})
                self._write_later()
                continue
            go: asyncio.Future[None] | None = None  # None: it has a slot
            if started < held:
                started += 1
            else:
                go = loop.create_future()
                self.ready.append(go)
            found.state = "here"
            found.task = loop.create_task(self._execute(found, task, go))
        slots.give(held - started)
        self._watch([b for b in fresh if b.prefix not in claimed])
        self._listen_for_slots()

    def ahead(self) -> int:
        """How many branches to claim beyond the slots (AHEAD, more for quick ones)."""
        if not self.took:
            return AHEAD
        return max(AHEAD, min(AHEAD_MOST, int(CLAIM_AHEAD_S / self.took)))

    def _look_again_later(self) -> None:
        """Branches another worker holds are claimable again once it is gone: looked at
        every LOOK_AGAIN seconds while there are any."""
        if self._look is None and self.loop is not None:
            self._look = self.loop.call_later(LOOK_AGAIN, self._looked)

    def _looked(self) -> None:
        self._look = None
        for branch in self.branches.values():
            if branch.state == "elsewhere":
                branch.state = "queued"
        self._pump_soon()

    def _watch(self, branches: list[_Branch]) -> None:
        """Hear of these branches' ends, executed by other workers."""
        if not branches:
            return
        loop = asyncio.get_running_loop()

        def heard(prefix: str, end: tuple[str, Any]) -> None:  # on the worker's loop
            soon(loop, lambda: self._ended_elsewhere(prefix, end))

        self.worker.ends.watch(self.run_id, [b.prefix for b in branches], heard)

    def _ended_elsewhere(self, prefix: str, end: tuple[str, Any]) -> None:
        branch = self.branches.get(prefix)
        if branch is not None and branch.state in ("queued", "elsewhere") \
                and not branch.ended.done():
            self.state.branched = True  # its replies are in the log only
            branch.ended.set_result(end)

    def _listen_for_slots(self) -> None:
        """While branches of the run wait in the queue or, claimed, for a slot, pump
        whenever the worker gives a slot back."""
        waiting = bool(self.ready) or any(b.state == "queued" for b in self.branches.values())
        if waiting and self._stop_listening is None and self.loop is not None:
            loop = self.loop
            self._stop_listening = self.worker.slots.listen(
                lambda: soon(loop, lambda: self._pump_soon(offered=True)))
        elif not waiting and self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None

    # -- a branch executed here ---------------------------------------------------------

    async def _execute(self, branch: _Branch, task: Any,
                       go: asyncio.Future[None] | None) -> None:
        """Execute a branch claimed for the run, once it has a slot (`go` done; None: it
        has one)."""
        worker, queue = self.worker, self.worker.branch_queue
        setup, log = worker.setup, worker.log
        what = f"branch {task.prefix} of run {task.run_id}"
        log("branch_claimed", f"claimed {what} (claim {task.claims})", run=task.run_id,
            step=task.prefix)
        if setup.metrics is not None:
            setup.metrics.branches_claimed.inc()
        stop_beat = worker.heartbeat.hold(lambda: queue.renew(task, setup.name, setup.lease),
                                          what)
        try:
            try:
                if go is not None:
                    await go  # a slot, passed on as a branch of the run ends
                began = time.monotonic()
                if task.claims == 1 and branch.here is not None:  # the run's state knows it
                    state, result = await branch_end(branch.here())
                else:  # executed by someone before: from the log, in a state of its own
                    self.state.branched = True
                    state, result = await execute_branch(worker.world, task, worker.tools,
                                                         worker.models, worker.known)
            finally:  # before its end is written: a renewal after it would call it lost
                stop_beat()
        except asyncio.CancelledError:
            self._left(go)
            if branch.withdrawn:  # nothing waits for it: said so at once
                self._write([{"prefix": task.prefix, "state": "cancelled", "result": None}])
            else:  # the lease was lost: another worker has it now
                branch.state = "queued"
                self._watch([branch])
            raise
        except WorldError as exc:  # the server away, or a successor committed first
            log("branch_left", f"{what} left for later: {exc}", run=task.run_id,
                step=task.prefix, level="warning")
            self._left(go)
            branch.state = "queued"  # its claim runs out; whoever takes it ends it
            self._watch([branch])
            return
        except Exception as exc:  # an error of lwtool's own: the run fails with it
            self._left(go)
            self.ends.append({"prefix": task.prefix, "state": "cancelled", "result": None})
            self._pump_soon()
            if not branch.ended.done():
                branch.ended.set_exception(exc)
            return
        took = time.monotonic() - began
        self.took = took if self.took is None else 0.7 * self.took + 0.3 * took
        log("branch_ended", f"{what} {state}", run=task.run_id, step=task.prefix)
        self.ends.append({"prefix": task.prefix, "state": state, "result": result})
        if not branch.ended.done():
            branch.ended.set_result((state, result))
        self._slot_freed()

    def _left(self, go: asyncio.Future[None] | None) -> None:
        """A branch stopped before its end: its slot freed, or its place in line left."""
        if go is None or (go.done() and not go.cancelled()):
            self._slot_freed()
        else:
            go.cancel()
            if go in self.ready:
                self.ready.remove(go)

    def _slot_freed(self) -> None:
        """A slot the run held is free: the next branch claimed already takes it; else
        it is kept for the run's next queued branch (claimed by the pump, with the ends
        written meanwhile) or given back to the worker, the ends written a moment later
        (WRITE_AFTER)."""
        while self.ready:
            go = self.ready.pop(0)
            if not go.done():
                go.set_result(None)
                return
        if any(b.state in ("new", "queued") for b in self.branches.values()):
            self.kept += 1
            self._pump_soon()
        else:
            self.worker.slots.give(1)
            self._write_later()

    def _write_later(self) -> None:
        if self._write_due is None and self.loop is not None:
            self._write_due = self.loop.call_later(WRITE_AFTER, self._written_due)

    def _written_due(self) -> None:
        self._write_due = None
        if self.ends:
            self._pump_soon()


    def _withdraw(self, branch: _Branch) -> None:
        """The run no longer waits for `branch` (fail_fast)."""
        branch.withdrawn = True
        if branch.state == "here" and branch.task is not None:
            branch.task.cancel()
        elif branch.state in ("queued", "elsewhere"):
            self.worker.ends.unwatch(self.run_id, [branch.prefix])
            try:  # (a resumed owner queues it again)
                self.worker.branch_queue.cancel(self.run_id, [branch.prefix])
            except WorldError:
                pass  # nobody claims it before the run resumes, or it runs for nothing

    def close(self) -> None:
        """The run is left: the ends not yet written are written, slots kept given back,
        nothing of it watched any more."""
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        for timer in (self._look, self._write_due):
            if timer is not None:
                timer.cancel()
        self._look = self._write_due = None
        self.worker.ends.unwatch_run(self.run_id)
        for branch in self.branches.values():  # the run left them (it failed, or stopped)
            branch.withdrawn = True
            if branch.task is not None:
                branch.task.cancel()
        self.worker.slots.give(self.kept)
        self.kept = 0
        ends, self.ends = self.ends, []
        self._write(ends)

    def _write(self, ends: list[dict[str, Any]]) -> None:
        """Write the ends of branches executed here, on their own."""
        if not ends:
            return
        try:
            self.worker.branch_queue.pump(self.run_id, self.worker.setup.name,
                                          self.worker.setup.lease, ends, [], [], 0)
        except WorldError:
            pass  # their claims run out; the next claims replay them from the log

"""`lwtool worker`: execute queued runs of a PostgreSQL world, and the parallel branches
of any run, `concurrency` of each at a time.

A worker claims the oldest runnable branch of other workers' runs
(lwtool.world.postgres_branches; a slot that helped with one goes on to the next on
the same loop, its end written with that claim: `_help`), else the oldest runnable run
(lwtool.world.postgres_queue), renews its lease while it executes
(lwtool.runtime.worker_beat: one thread for every claim), and ends its claim `done` or
`failed`. The runs it executes hand their parallel branches to the branch queue and
execute as many as the worker has free branch slots for themselves
(lwtool.runtime.own_branches), so one run's branches spread over every worker. Each
claimed run and branch executes on an event loop and thread of its own
(lwtool.runtime.own_loop), so none holds up another or the claiming here. It starts a
run the queue recorded, or resumes one from its event log (a run whose worker died: its
completed steps are not run again, the attempt in flight runs again). A run another
worker still executes (its run lock held) is handed back.
`stop` (SIGTERM) ends claiming; the runs in hand finish first. With `drain`, the worker
ends once no run is queued or claimed anywhere.
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lwtool.capability.secrets import current_broker
from lwtool.lock.version_record import SurfaceDrift, drift_message, drifted, pin_needs
from lwtool.record.errors import RunFailedError, RunWaitingError
from lwtool.runtime.needs import worker_serves
from lwtool.runtime.own_loop import on_own_loop, soon
from lwtool.runtime.worker_beat import Heartbeat
from lwtool.runtime.worker_chores import export, needs_of, wake_parent
from lwtool.runtime.worker_log import WorkerLog
from lwtool.tools import ToolRegistry
from lwtool.world.base import RunLocked, WorldError
from lwtool.world.postgres_queue import DEFAULT_QUEUE

POLL_SECONDS = 1.0  # seconds between looks when no notification came (takeovers)
AWAY_MOST = 5.0  # seconds between looks at a world that cannot be reached
BEAT_MOST = 5.0  # seconds between a worker's heartbeats at most


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class WorkerSetup:
    """How a worker works: `concurrency` runs and as many branches at once, claims held
    `lease` seconds, the `queues` it takes from, its log, its metrics (None: none) and
    where it exports each run it ends (an OTLP/HTTP endpoint; None: nowhere)."""
    concurrency: int = 1
    lease: float = 30.0
    drain: bool = False
    queues: list[str] = field(default_factory=lambda: [DEFAULT_QUEUE])
    name: str = field(default_factory=worker_name)
    log: WorkerLog | None = None
    metrics: Any = None  # lwtool.observe.worker_metrics.WorkerMetrics
    otel_endpoint: str | None = None

    @property
    def beat_every(self) -> float:
        return min(self.lease / 3, BEAT_MOST)


async def work(world: Any, tools: ToolRegistry, models: dict[str, str],
               setup: WorkerSetup | None = None, stop: asyncio.Event | None = None) -> int:
    """Claim and execute runs and parallel branches until `stop` is set (or, with
    `drain`, nothing is queued or claimed); returns how many runs this worker ended.
    Runs and branches have `concurrency` slots each: a run waiting for its branches
    never keeps this worker from executing branches (its own or another run's). After
    `stop`, no new run is claimed; the runs in hand finish (their branches still come
    here). A world that cannot be reached is looked at again, less and less often, until
    it answers: the claims in hand run out meanwhile and are taken again. The worker is
    registered (lwtool.world.postgres_workers) while it works: its lock tells others
    the moment it dies."""
    from lwtool.calls.models import call_models_on
    from lwtool.record.run_state import LOOP_SHARED
    from lwtool.world.postgres_workers import WorkerRegistration

    setup = setup or WorkerSetup()
    setup.log = setup.log or WorkerLog(setup.name)
    # Runs and branches execute on loops of their own (own_loop); anything made on this
    # one that commits must not block it either.
    LOOP_SHARED.set(True)
    # ... and make their model calls on this one: one litellm client (and its kept-alive
    # connections) for every run of the worker, instead of one a run.
    call_models_on(asyncio.get_running_loop())
    # the secrets it can give (names only): its --secrets FILE's, else its environment's
    # credential-named variables
    serves = worker_serves(tools, models, current_broker().offered())
    registration = WorkerRegistration(world, setup.name, setup.queues, serves)
    await asyncio.to_thread(registration.join)
    world.on_commit = _on_commit(setup)
    try:
        return await _Worker(world, tools, models, setup, serves, registration).work(
            stop or asyncio.Event())
    finally:
        call_models_on(None)
        world.on_commit = None
        await asyncio.to_thread(registration.leave)


def _on_commit(setup: WorkerSetup) -> Any:
    """What sees the events a run commits here: the log's step lines, the metrics."""
    log, metrics = setup.log, setup.metrics
    assert log is not None

    def committed(run_id: str, events: list[Any]) -> None:
        log.steps(run_id, events)
        if metrics is not None:
            metrics.committed(run_id, events)
    return committed


class _Worker:
    def __init__(self, world: Any, tools: ToolRegistry, models: dict[str, str],
                 setup: WorkerSetup, serves: list[str], registration: Any) -> None:
        from lwtool.runtime.branches import BranchEnds
        from lwtool.runtime.child_ends import RunEnds
        from lwtool.runtime.own_branches import BranchSlots
        from lwtool.world.postgres_branches import BranchQueue
        from lwtool.world.postgres_queue import RunQueue

        assert setup.log is not None
        self.world, self.tools, self.models, self.setup = world, tools, models, setup
        self.serves, self.registration, self.log = serves, registration, setup.log
        self.queue, self.branch_queue = RunQueue(world), BranchQueue(world)
        self.ends = BranchEnds(self.branch_queue, asyncio.get_running_loop(), setup.log.line)
        self.run_ends = RunEnds(world.url)  # its runs' children's ends
        self.slots = BranchSlots(setup.concurrency)  # its runs' own branches take them too
        self.runs: set[asyncio.Task[bool]] = set()
        self.run_ids: set[str] = set()  # of the runs in hand: their owners claim their branches
        self.branches: set[asyncio.Task[bool]] = set()
        self.known: dict[str, Any] = {}  # run records and versions, between branches
        # whether a branch may be queued: not after a claim found none, until one is
        # heard of (NOTIFY) or a look at the queue is due (a dead worker's branches)
        self.branches_maybe = True
        self.branch_notes = 0  # branch notifications heard
        # whether a run it can claim may be queued: not after a claim found none, until
        # a run is heard of (queued, or a claim ended: a limited queue has room) or a
        # look is due. Branch notes alone do not make a helper look for runs again.
        self.runs_maybe = True
        self.run_notes = 0  # run notifications heard
        self.runs_looked = 0.0  # monotonic time of the last claim of a run tried
        self.loop: asyncio.AbstractEventLoop | None = None  # the worker's own (work())
        self.wake = asyncio.Event()  # work was queued (NOTIFY), a claim or branch ended
        self._timed_out = False  # _wait's timer went off
        self.stopping = threading.Event()  # set with stop: helping claims no more branches
        self.heartbeat = Heartbeat(registration, setup.beat_every, setup.log, setup.metrics,
                                   lambda: (len(self.runs), self.slots.used))

    async def work(self, stop: asyncio.Event) -> int:
        setup, log = self.setup, self.log
        ended, away = 0, 0.0
        wake = self.wake
        stop_beat = self.heartbeat.start()
        stop_listen = _listen_thread(self, wake)
        loop = self.loop = asyncio.get_running_loop()
        # a slot given back: claim other workers' branches with it, when some may wait
        stop_slots = self.slots.listen(lambda: self._slot_freed(loop, wake))
        stopping = asyncio.create_task(stop.wait())  # stop wakes the claim loop too
        stopping.add_done_callback(self._ended)
        stopping.add_done_callback(lambda _: self.stopping.set())  # and ends helping
        try:
            while self.runs or not stop.is_set():
                wake.clear()
                try:
                    if await self._claim(stop):
                        continue
                    if setup.drain and not self.runs and not self.branches and \
                            await asyncio.to_thread(self.queue.pending, self.serves,
                                                    setup.queues) == 0:
                        break
                    away = 0.0
                except WorldError as exc:
                    away = min(max(away * 2, 0.2), AWAY_MOST)
                    log("world_away", f"cannot claim work: {exc}; looking again in "
                        f"{away:g} s", level="warning")
                ended += await self._wait(wake, away or POLL_SECONDS)
        finally:
            stopping.cancel()
            stop_slots()
            stop_listen()
            self.run_ends.stop()
            stop_beat()
        if self.branches:  # the last branches helped, their ends written
            await asyncio.wait(self.branches)
        return ended

    def _slot_freed(self, loop: asyncio.AbstractEventLoop, wake: asyncio.Event) -> None:
        if self.branches_maybe:
            soon(loop, wake.set)

    async def _claim(self, stop: asyncio.Event) -> bool:
        """Claim branches for the free branch slots, else one run if a slot is free;
        whether anything was claimed."""
        setup, metrics = self.setup, self.setup.metrics
        free = self.slots.take(setup.concurrency) if self.branches_maybe else 0
        if free > 0:
            notes, tasks = self.branch_notes, list[Any]()
            try:  # each branch claimed keeps its slot until its chain ends
                tasks, _ = await asyncio.to_thread(
                    self.branch_queue.end_and_claim, [], setup.name, setup.lease,
                    self.serves, setup.queues, free, sorted(self.run_ids))
            finally:
                self.slots.give(free - len(tasks))
            if not tasks and notes == self.branch_notes:  # none heard of meanwhile
                self.branches_maybe = False
            for task in tasks:  # as many as there are free slots, in one claim
                self.claimed_branch(task)
                helping = asyncio.create_task(_execute_branch(self, task))
                helping.add_done_callback(self._ended)
                self.branches.add(helping)
            if tasks:
                self.heartbeat.poke()
                return True
        # a look is due every POLL_SECONDS however busy (a dead worker's run, no note)
        due = time.monotonic() - self.runs_looked >= POLL_SECONDS
        if len(self.runs) < setup.concurrency and (self.runs_maybe or due) and \
                not stop.is_set():
            notes, self.runs_looked = self.run_notes, time.monotonic()
            claim = await asyncio.to_thread(self.queue.claim, setup.name, setup.lease,
                                            self.serves, setup.queues)
            if claim is None and notes == self.run_notes:  # none heard of meanwhile
                self.runs_maybe = False
            if claim is not None:
                self.log("run_claimed", f"claimed run {claim.run_id} (claim {claim.claims})",
                         run=claim.run_id)
                if metrics is not None:
                    metrics.runs_claimed.inc()
                    metrics.claim_latency.observe(max(time.time() - claim.enqueued_at, 0.0))
                self.run_ids.add(claim.run_id)
                executing = asyncio.create_task(_execute(self, claim))
                executing.add_done_callback(lambda _: self.run_ids.discard(claim.run_id))
                executing.add_done_callback(self._ended)
                self.runs.add(executing)
                self.heartbeat.poke()
                return True
        return False

    async def execute_here(self, claim: Any, parent: str) -> None:
        """Execute a child run this worker claimed for its `parent` (a run it executes,
        waiting for it): on the worker's loop, as any claimed run, in the slot the
        parent lends it. Returns when the child's claim ends (or is lost)."""
        self.log("run_claimed", f"claimed run {claim.run_id} (claim {claim.claims}), a "
                 f"child of run {parent}", run=claim.run_id)
        assert self.loop is not None
        done = asyncio.run_coroutine_threadsafe(_execute(self, claim), self.loop)
        try:
            await asyncio.wrap_future(done)
        except asyncio.CancelledError:
            done.cancel()
            raise

    async def _wait(self, wake: asyncio.Event, timeout: float) -> int:
        """Wait for a run or branch to end, work to be queued, stop (each sets `wake`),
        or `timeout`; returns how many runs ended. No task is made a wait: a worker
        helping with branches waits once a branch."""
        runs = [task for task in self.runs if task.done()]
        branches = [task for task in self.branches if task.done()]
        if not runs and not branches and not wake.is_set():
            timer = asyncio.get_running_loop().call_later(timeout, self._time_up)
            try:
                await wake.wait()
            finally:
                timer.cancel()
            runs = [task for task in self.runs if task.done()]
            branches = [task for task in self.branches if task.done()]
            if self._timed_out and not runs and not branches:
                # a look is due: what a dead worker left is claimable now
                self.branches_maybe = self.runs_maybe = True
        self._timed_out = False
        ended = 0
        for finished in runs:
            if not finished.cancelled():  # cancelled: its lease was lost
                ended += bool(finished.result())
            self.runs.discard(finished)
        self.branches.difference_update(branches)
        if runs or branches:
            self.heartbeat.poke()
        return ended

    def claimed_branch(self, task: Any) -> None:
        """Say a branch was claimed (from any thread)."""
        self.log("branch_claimed", f"claimed branch {task.prefix} of run {task.run_id} "
                 f"(claim {task.claims})", run=task.run_id, step=task.prefix)
        if self.setup.metrics is not None:
            self.setup.metrics.branches_claimed.inc()

    def _time_up(self) -> None:
        self._timed_out = True
        self.wake.set()

    def _ended(self, _: Any) -> None:
        """A run's or branch's task is done: the claim loop looks again."""
        self.wake.set()


async def _execute_branch(worker: _Worker, task: Any) -> bool:
    """Execute claimed branches of other workers' runs, one after another, in one slot
    and on one loop of their own: each branch's end is written with the claim of the
    next (one statement, made on that loop), until none is left or the worker stops."""
    try:
        return await on_own_loop(lambda: _help(worker, task),
                                 f"lwtool branch {task.prefix} of run {task.run_id}")
    finally:
        worker.slots.give(1)


async def _help(worker: _Worker, task: Any) -> bool:
    """`_execute_branch`'s chain, on its own loop; whether the last end was written."""
    from lwtool.runtime.branches import execute_branch

    setup, queue, log = worker.setup, worker.branch_queue, worker.log
    while True:
        what = f"branch {task.prefix} of run {task.run_id}"
        threading.current_thread().name = f"lwtool {what}"
        stop_beat = worker.heartbeat.hold(
            functools.partial(queue.renew, task, setup.name, setup.lease), what)
        try:
            state, result = await execute_branch(worker.world, task, worker.tools,
                                                 worker.models, worker.known)
        except WorldError as exc:  # the server away, or a successor committed first
            log("branch_left", f"{what} left for later: {exc}", run=task.run_id,
                step=task.prefix, level="warning")
            return False
        finally:
            stop_beat()
        more = 0 if worker.stopping.is_set() else 1
        try:  # blocking this loop, which serves this chain alone
            claimed, written = queue.end_and_claim(
                [(task, state, result)], setup.name, setup.lease, worker.serves,
                setup.queues, more, sorted(list(worker.run_ids)))
        except WorldError as exc:
            return _not_ended(log, what, exc)
        ended = (task.run_id, task.prefix) in written
        if ended:
            log("branch_ended", f"{what} {state}", run=task.run_id, step=task.prefix)
        else:
            _lease_lost(log, what)
        if not claimed:
            return ended
        task = claimed[0]
        worker.claimed_branch(task)


async def _execute(worker: _Worker, claim: Any) -> bool:
    """Execute one claimed run; True when it ended (completed, failed or waiting)."""
    from lwtool.calls.models import UnresolvedModel
    from lwtool.runtime.interpreter import start_run
    from lwtool.runtime.own_branches import OwnBranches
    from lwtool.tools import MissingTools

    world, setup, queue, log = worker.world, worker.setup, worker.queue, worker.log
    run_id, what = claim.run_id, f"run {claim.run_id}"
    # the commit that ends the run ends the claim too: a renewal after it is no lost lease
    world.end_claim_with_run(run_id, setup.name)
    stop_beat = worker.heartbeat.hold(
        lambda: queue.renew(run_id, setup.name, setup.lease) or
        world.claim_ended(run_id, forget=False) or queue.ended_by(run_id, setup.name), what)
    branches = OwnBranches(worker, run_id, claim.queue)

    async def start() -> dict[str, Any]:  # on the run's own loop (own_loop)
        lwir = world.get_version(claim.version_id)
        if lwir is None:
            raise RunFailedError(run_id, claim.version_id, "runtime_config_error",
                                 f"the world has no WorkflowVersion {claim.version_id}")
        # the version's capability snapshot, verified before anything executes
        drift = drifted(world.version_meta(claim.version_id), worker.tools.tools)
        if drift:
            raise SurfaceDrift(drift, drift_message(claim.version_id, drift,
                                                    worker.tools.tools))
        options = claim.options  # start_run resumes a run that exists (a dead worker's)
        try:
            return await start_run(world, lwir, claim.run_input, worker.tools,
                                   {**dict(options.get("models") or {}), **worker.models},
                                   run_id, step_timeout=options.get("stepTimeoutS"),
                                   workspace=options.get("workspace"),
                                   durability=options.get("durability"),
                                   version_id=claim.version_id, branches=branches,
                                   budget=options.get("budget"), links=options.get("links"),
                                   fresh=claim.claims == 1)  # else a dead worker's, likely
        finally:
            branches.close()

    try:
        result = await on_own_loop(start, f"lwtool {what}")
        state, said = "done", f"{what} {result.get('status', 'completed')}"
    except RunLocked:  # executed elsewhere: nothing was run here
        log("run_handed_back", f"{what} is being executed elsewhere: handed back", run=run_id)
        await _end(lambda: queue.finish(run_id, setup.name, "queued"), what, log)
        await asyncio.sleep(setup.lease / 3)
        return False
    except (MissingTools, UnresolvedModel, SurfaceDrift) as refused:  # nothing was run here
        needs = await asyncio.to_thread(needs_of, world, claim)
        if isinstance(refused, SurfaceDrift) and needs is not None:
            needs += pin_needs(refused.pins)  # for a worker with the version's surface
        log("run_handed_back", f"{what} handed back: this worker cannot serve it: {refused}",
            run=run_id, level="warning")
        await _end(lambda: queue.finish(run_id, setup.name, "queued", needs), what, log)
        return False
    except RunFailedError as failed:
        state, said = "failed", (f"{what} failed ({failed.cause_code}): {failed.message}; "
                                 f"retry it: lwtool retry {run_id} --enqueue")
    except RunWaitingError as waiting:  # `lwtool respond ... --resume` goes on with it
        paths = ", ".join(str(r["stepPath"]) for r in waiting.requests)
        state, said = "waiting", f"{what} waits for a person at {paths}"
    except WorldError as exc:  # the server is away: the lease runs out, the run waits
        log("run_left", f"{what} left for later: {exc}", run=run_id, level="warning")
        return False
    finally:
        stop_beat()
        ended = world.claim_ended(run_id)  # by the run's final commit
    log("run_ended", said, run=run_id)
    if not ended and not await _end(lambda: queue.finish(run_id, setup.name, state), what,
                                    log):
        return False
    if setup.metrics is not None:
        setup.metrics.runs_ended.labels(state).inc()
    parent = (claim.options.get("links") or {}).get("parentRunId")
    if parent and state in ("done", "failed"):  # a child ended: a parent that waited
        await asyncio.to_thread(wake_parent, queue, parent, log)  # for it goes on
    if setup.otel_endpoint is not None:
        await asyncio.to_thread(export, world, run_id, setup.otel_endpoint, log)
    return True


async def _end(finish: Callable[[], Any], what: str, log: WorkerLog) -> bool:
    """End a claim; False when it is not this worker's any more, or the world cannot be
    reached (the claim then runs out, and the next claim finds the run's end)."""
    try:
        ended = await asyncio.to_thread(finish)
    except WorldError as exc:
        return _not_ended(log, what, exc)
    return ended is not False or _lease_lost(log, what)


def _not_ended(log: WorkerLog, what: str, exc: WorldError) -> bool:
    log("claim_not_ended", f"{what}: its claim could not be ended: {exc}", level="warning")
    return False


def _lease_lost(log: WorkerLog, what: str) -> bool:
    log("lease_lost", f"{what}: the lease was lost before it ended; its end is another "
        "worker's", level="warning")
    return False


def _listen_thread(worker: _Worker, wake: asyncio.Event) -> Callable[[], None]:
    """Set `wake` (on the calling loop) each time work is queued on one of the worker's
    queues, or a claim of one ends (NOTIFY on the world's work channel), from a thread
    listening on a connection of its own; a lost connection is opened again. The
    returned call stops it."""
    from lwtool.world.postgres_queue import BRANCH_NOTE, WORK_CHANNEL, listen

    loop, stopped = asyncio.get_running_loop(), threading.Event()
    wanted = set(worker.setup.queues)

    def woken(branch: bool) -> None:
        if branch:
            worker.branches_maybe = True
            worker.branch_notes += 1
        else:
            worker.runs_maybe = True
            worker.run_notes += 1
        wake.set()

    def heard(payload: str) -> None:
        queue = payload.removeprefix(BRANCH_NOTE)
        if queue in wanted:
            loop.call_soon_threadsafe(woken, queue != payload)

    def keep_listening() -> None:
        while not stopped.is_set():
            listen(worker.world.url, WORK_CHANNEL, stopped.is_set, heard)
            stopped.wait(1.0)

    threading.Thread(target=keep_listening, name="lwtool worker listener", daemon=True).start()
    return stopped.set

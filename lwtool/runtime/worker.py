"""`lwtool worker`: execute queued runs of a PostgreSQL world, and the parallel branches
of any run, `concurrency` of each at a time.

A worker claims the oldest runnable branch (lwtool.world.postgres_branches), else the
oldest runnable run (lwtool.world.postgres_queue), renews its lease every third of it
while it executes (from a thread, so a loop held up never lets it run out), and ends
its claim `done` or `failed`. The runs it executes hand their parallel branches to the
branch queue (lwtool.runtime.branches), so one run's branches spread over every
worker. Each claimed run and branch executes on an event loop and thread of its own
(lwtool.runtime.own_loop), so none holds up another or the claiming here. It starts a
run the queue recorded, or resumes one from its event log (a run whose worker died: its
completed steps are not run again, the attempt in flight runs again). A run another
worker still executes (its run lock held) is handed back.
`stop` (SIGTERM) ends claiming; the runs in hand finish first. With `drain`, the worker
ends once no run is queued or claimed anywhere.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Callable
from typing import Any

from lwtool.record.errors import RunFailedError, RunWaitingError
from lwtool.runtime.own_loop import on_own_loop
from lwtool.tools import ToolRegistry
from lwtool.world.base import RunLocked, WorldError

POLL_SECONDS = 0.2
AWAY_MOST = 5.0  # seconds between looks at a world that cannot be reached


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def work(world: Any, tools: ToolRegistry, models: dict[str, str], *,
               concurrency: int = 1, lease: float = 30.0, drain: bool = False,
               stop: asyncio.Event | None = None, say: Callable[[str], None] | None = None,
               name: str | None = None) -> int:
    """Claim and execute runs and parallel branches until `stop` is set (or, with
    `drain`, nothing is queued or claimed); returns how many runs this worker ended.
    Runs and branches have `concurrency` slots each: a run waiting for its branches
    never keeps this worker from executing branches (its own or another run's). After
    `stop`, no new run is claimed; the runs in hand finish (their branches still come
    here). A world that cannot be reached is looked at again, less and less often, until
    it answers: the claims in hand run out meanwhile and are taken again."""
    from lwtool.calls.models import call_models_on
    from lwtool.record.run_state import LOOP_SHARED

    # Runs and branches execute on loops of their own (own_loop); anything made on this
    # one that commits must not block it either.
    LOOP_SHARED.set(True)
    # ... and make their model calls on this one: one litellm client (and its kept-alive
    # connections) for every run of the worker, instead of one a run.
    call_models_on(asyncio.get_running_loop())
    try:
        return await _work(world, tools, models, concurrency, lease, drain, stop, say, name)
    finally:
        call_models_on(None)


async def _work(world: Any, tools: ToolRegistry, models: dict[str, str], concurrency: int,
                lease: float, drain: bool, stop: asyncio.Event | None,
                say: Callable[[str], None] | None, name: str | None) -> int:
    from lwtool.runtime.branches import RemoteBranches
    from lwtool.world.postgres_branches import BranchQueue
    from lwtool.world.postgres_queue import RunQueue

    queue, branch_queue = RunQueue(world), BranchQueue(world)
    remote = RemoteBranches(branch_queue, say)
    name = name or worker_name()
    log = say or (lambda _: None)
    stop = stop or asyncio.Event()
    runs: set[asyncio.Task[bool]] = set()
    branches: set[asyncio.Task[bool]] = set()
    ended, away = 0, 0.0
    known: dict[str, Any] = {}  # run records and versions, between branches
    serves = tools.names()  # a run or branch needing another tool is left to another worker
    while runs or not stop.is_set():
        try:
            if len(branches) < concurrency:
                task = await asyncio.to_thread(branch_queue.claim, name, lease, serves)
                if task is not None:
                    log(f"claimed branch {task.prefix} of run {task.run_id} "
                        f"(claim {task.claims})")
                    branches.add(asyncio.create_task(_execute_branch(
                        world, branch_queue, task, tools, models, name, lease, log, known)))
                    continue
            if len(runs) < concurrency and not stop.is_set():
                claim = await asyncio.to_thread(queue.claim, name, lease, serves)
                if claim is not None:
                    log(f"claimed run {claim.run_id} (claim {claim.claims})")
                    runs.add(asyncio.create_task(_execute(world, queue, claim, tools, models,
                                                          name, lease, log, remote)))
                    continue
            if drain and not runs and not branches and \
                    await asyncio.to_thread(queue.pending, serves) == 0:
                break
            away = 0.0
        except WorldError as exc:
            away = min(max(away * 2, POLL_SECONDS), AWAY_MOST)
            log(f"cannot claim work: {exc}; looking again in {away:g} s")
        running = runs | branches
        if running:
            done, _ = await asyncio.wait(running, timeout=away or POLL_SECONDS,
                                        return_when=asyncio.FIRST_COMPLETED)
        else:
            done = set()
            await asyncio.sleep(away or POLL_SECONDS)
        for finished in done:
            if finished in runs and not finished.cancelled():  # cancelled: lease lost
                ended += bool(finished.result())
            runs.discard(finished)
            branches.discard(finished)
    if branches:
        await asyncio.gather(*branches, return_exceptions=True)
    return ended


async def _execute_branch(world: Any, queue: Any, task: Any, tools: ToolRegistry,
                          models: dict[str, str], name: str, lease: float,
                          log: Callable[[str], None], known: dict[str, Any]) -> bool:
    """Execute one claimed branch and end its claim with the branch's end."""
    from lwtool.runtime.branches import execute_branch

    what = f"branch {task.prefix} of run {task.run_id}"
    stop_beat = _heartbeat(lambda: queue.renew(task, name, lease), what, lease, log)
    try:
        state, result = await on_own_loop(
            lambda: execute_branch(world, task, tools, models, known), f"lwtool {what}")
    except WorldError as exc:  # the server away, or a successor committed first
        log(f"{what} left for later: {exc}")
        return False
    finally:
        stop_beat()
    if not await _end(lambda: queue.finish(task, name, state, result), what, log):
        return False
    log(f"{what} {state}")
    return True


async def _execute(world: Any, queue: Any, claim: Any, tools: ToolRegistry,
                   models: dict[str, str], name: str, lease: float,
                   log: Callable[[str], None], remote: Any) -> bool:
    """Execute one claimed run; True when it ended (completed, failed or waiting)."""
    from lwtool.calls.models import UnresolvedModel
    from lwtool.runtime.branches import BranchesFrom
    from lwtool.runtime.interpreter import start_run
    from lwtool.tools import MissingTools

    what = f"run {claim.run_id}"
    stop_beat = _heartbeat(lambda: queue.renew(claim.run_id, name, lease), what, lease, log)
    branches = BranchesFrom(remote, asyncio.get_running_loop())

    async def start() -> dict[str, Any]:  # on the run's own loop (own_loop)
        lwir = world.get_version(claim.version_id)
        if lwir is None:
            raise RunFailedError(claim.run_id, claim.version_id, "runtime_config_error",
                                 f"the world has no WorkflowVersion {claim.version_id}")
        options = claim.options  # start_run resumes a run that exists (a dead worker's)
        return await start_run(world, lwir, claim.run_input, tools,
                               {**dict(options.get("models") or {}), **models},
                               claim.run_id, step_timeout=options.get("stepTimeoutS"),
                               workspace=options.get("workspace"),
                               durability=options.get("durability"),
                               version_id=claim.version_id, branches=branches,
                               budget=options.get("budget"))

    try:
        result = await on_own_loop(start, f"lwtool {what}")
        state, said = "done", f"{what} {result.get('status', 'completed')}"
    except (RunLocked, MissingTools, UnresolvedModel) as refused:  # nothing was run here
        log(f"{what} is being executed elsewhere: handed back" if isinstance(
            refused, RunLocked) else f"{what} handed back: this worker cannot serve it: "
            f"{refused}")
        await _end(lambda: queue.finish(claim.run_id, name, "queued"), what, log)
        await asyncio.sleep(lease / 3)
        return False
    except RunFailedError as failed:
        state, said = "failed", f"{what} failed ({failed.cause_code}): {failed.message}"
    except RunWaitingError as waiting:  # `lwtool respond ... --resume` goes on with it
        paths = ", ".join(str(r["stepPath"]) for r in waiting.requests)
        state, said = "waiting", f"{what} waits for a person at {paths}"
    except WorldError as exc:  # the server is away: the lease runs out, the run waits
        log(f"{what} left for later: {exc}")
        return False
    finally:
        stop_beat()
    log(said)
    return await _end(lambda: queue.finish(claim.run_id, name, state), what, log)


async def _end(finish: Callable[[], Any], what: str, log: Callable[[str], None]) -> bool:
    """End a claim; False when it is not this worker's any more, or the world cannot be
    reached (the claim then runs out, and the next claim finds the run's end)."""
    try:
        ended = await asyncio.to_thread(finish)
    except WorldError as exc:
        log(f"{what}: its claim could not be ended: {exc}")
        return False
    if ended is False:
        log(f"{what}: the lease was lost before it ended; its end is another worker's")
        return False
    return True


def _heartbeat(renew: Callable[[], bool], what: str, lease: float,
               log: Callable[[str], None]) -> Callable[[], None]:
    """Renew a claim every third of its lease while the current task executes it; the
    returned call stops renewing. The beat runs in a thread of its own, so a loop held
    up (a commit waiting for a server that is away, a tool that blocks the loop) never
    lets the claim run out while this worker lives. A claim found to be another
    worker's (this one's lease ran out while the world could not be reached, and
    another worker took it) cancels the current task: two workers never go on
    executing one run or branch. A world that cannot be reached is tried again at the
    next beat."""
    holder, loop = asyncio.current_task(), asyncio.get_running_loop()
    stopped = threading.Event()

    def beat() -> None:
        while not stopped.wait(lease / 3):
            try:
                kept = renew()
            except WorldError as exc:
                if not stopped.is_set():  # (else the claim ended meanwhile)
                    log(f"{what}: the lease could not be renewed: {exc}")
                continue
            if not kept and not stopped.is_set():  # (set first when the claim ends)
                log(f"{what}: the lease was lost to another worker; stopped here")
                if holder is not None:
                    loop.call_soon_threadsafe(holder.cancel)
                return

    threading.Thread(target=beat, name=f"lwtool heartbeat: {what}", daemon=True).start()
    return stopped.set

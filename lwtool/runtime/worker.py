"""`lwtool worker`: execute queued runs of a PostgreSQL world, `concurrency` at a time.

A worker claims the oldest runnable run (lwtool.world.postgres_queue), renews its lease
every third of it while the run executes, and ends its claim `done` or `failed`. It
starts a run the queue recorded, or resumes one from its event log (a run whose worker
died: its completed steps are not run again, the attempt in flight runs again). A run
another worker still executes (its run lock held) is handed back. `stop` (SIGTERM)
ends claiming; the runs in hand finish first. With `drain`, the worker ends once no
run is queued or claimed anywhere.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from typing import Any

from lwtool.record.errors import RunFailedError
from lwtool.tools import ToolRegistry
from lwtool.world.base import RunLocked, StoreUnavailable, WorldError

POLL_SECONDS = 0.2


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


async def work(world: Any, tools: ToolRegistry, models: dict[str, str], *,
               concurrency: int = 1, lease: float = 30.0, drain: bool = False,
               stop: asyncio.Event | None = None, say: Callable[[str], None] | None = None,
               name: str | None = None) -> int:
    """Claim and execute runs until `stop` is set (or, with `drain`, the queue is empty);
    returns how many runs this worker ended."""
    from lwtool.world.postgres_queue import RunQueue

    queue = RunQueue(world)
    name = name or worker_name()
    log = say or (lambda _: None)
    stop = stop or asyncio.Event()
    running: set[asyncio.Task[bool]] = set()
    ended = 0
    while not stop.is_set():
        claim = queue.claim(name, lease) if len(running) < concurrency else None
        if claim is not None:
            log(f"claimed run {claim.run_id} (claim {claim.claims})")
            running.add(asyncio.create_task(_execute(world, queue, claim, tools, models,
                                                     name, lease, log)))
            continue
        if drain and not running and queue.pending() == 0:
            break
        if running:
            done, _ = await asyncio.wait(running, timeout=POLL_SECONDS)
        else:
            done = set()
            await asyncio.sleep(POLL_SECONDS)
        for task in done:
            running.discard(task)
            ended += bool(task.result())
    if running:  # SIGTERM: finish what is in hand
        ended += sum(bool(done) for done in await asyncio.gather(*running))
    return ended


async def _execute(world: Any, queue: Any, claim: Any, tools: ToolRegistry,
                   models: dict[str, str], name: str, lease: float,
                   log: Callable[[str], None]) -> bool:
    """Execute one claimed run; True when it ended (completed or failed)."""
    from lwtool.runtime.interpreter import start_run

    heartbeat = asyncio.create_task(_renew(queue, claim.run_id, name, lease, log))
    try:
        lwir = world.get_version(claim.version_id)
        if lwir is None:
            raise RunFailedError(claim.run_id, claim.version_id, "runtime_config_error",
                                 f"the world has no WorkflowVersion {claim.version_id}")
        options = claim.options  # start_run resumes a run that exists (a dead worker's)
        result = await start_run(world, lwir, claim.run_input, tools,
                                 {**dict(options.get("models") or {}), **models},
                                 claim.run_id, step_timeout=options.get("stepTimeoutS"),
                                 workspace=options.get("workspace"),
                                 durability=options.get("durability"),
                                 version_id=claim.version_id)
    except RunLocked:
        log(f"run {claim.run_id} is being executed elsewhere: handed back")
        queue.finish(claim.run_id, name, "queued")
        await asyncio.sleep(lease / 3)
        return False
    except RunFailedError as failed:
        log(f"run {claim.run_id} failed ({failed.cause_code}): {failed.message}")
        queue.finish(claim.run_id, name, "failed")
        return True
    except (StoreUnavailable, WorldError) as exc:  # the server is away: the lease runs out
        log(f"run {claim.run_id} left for later: {exc}")
        return False
    finally:
        heartbeat.cancel()
    queue.finish(claim.run_id, name, "done")
    log(f"run {claim.run_id} {result.get('status', 'completed')}")
    return True


async def _renew(queue: Any, run_id: str, name: str, lease: float,
                 log: Callable[[str], None]) -> None:
    while True:
        await asyncio.sleep(lease / 3)
        try:
            if not await asyncio.to_thread(queue.renew, run_id, name, lease):
                log(f"run {run_id}: the lease was lost")
                return
        except WorldError as exc:
            log(f"run {run_id}: the lease could not be renewed: {exc}")

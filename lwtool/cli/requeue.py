"""`lwtool replay RUN --enqueue` and `lwtool retry RUN --enqueue` (PostgreSQL): hand a
run back to the workers instead of going on with it here. `retry` reopens a failed run
first (its RunRetried committed under the run's lock, as `lwtool retry` does); `replay`
queues an interrupted run again (one a dead worker left is taken over anyway)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwtool.cli.render import say
from lwtool.cli.runtime_options import fail, open_world, postgres_url, world_errors


def requeue(run_id: str, data_dir: Path, retry: bool, queue: str | None) -> None:
    from lwtool.record.retry import NotRetryable

    if postgres_url() is None:
        raise fail("--enqueue needs a PostgreSQL world (--world postgresql://... or "
                   "LWTOOL_WORLD): workers take the run from there")
    world = open_world(data_dir, must_exist=True)
    try:
        with world_errors():
            queued = _requeue(world, run_id, retry, queue)
    except NotRetryable as exc:
        raise fail(str(exc)) from None
    finally:
        world.close()
    if not queued:
        raise fail(f"run {run_id} is held by a worker now; it goes on there")
    say(f"run {run_id} {'reopened and ' if retry else ''}queued again; `lwtool worker` "
        "processes go on with it")


def _requeue(world: Any, run_id: str, retry: bool, queue: str | None) -> bool:
    """Reopen the run (`retry`) and queue it; False when a worker holds it now."""
    from lwtool.record.retry import retry_event
    from lwtool.runtime.needs import run_needs
    from lwtool.world.base import shown_status
    from lwtool.world.postgres_queue import RunQueue

    record = world.get_run(run_id)
    lwir = world.get_version(record.version_id) or {}
    status = shown_status(world, run_id, str(record.status))
    if retry:
        with world.lock_run(run_id):
            world.append(run_id, [retry_event(run_id, world.events(run_id), lwir)],
                         status="running")
    elif status in ("completed", "failed"):
        raise fail(f"run {run_id} has {status}: " + (
            f"`lwtool retry {run_id} --enqueue` runs its failed steps again"
            if status == "failed" else "there is nothing to go on with"))
    elif status == "running":
        raise fail(f"run {run_id} is being executed (see `lwtool runs`)")
    options = dict(record.options)
    return bool(RunQueue(world).requeue_run(
        run_id, record.version_id, record.input, options,
        run_needs(lwir, options.get("models") or {}), queue))

"""What a worker does around a run's end, off its loop: the needs of a run it hands
back, a waiting parent queued again once its child ended, the run's trace sent to an
OTLP endpoint."""

from __future__ import annotations

from typing import Any

from lwtool.runtime.worker_log import WorkerLog
from lwtool.world.base import WorldError


def wake_parent(queue: Any, parent: str, log: WorkerLog) -> None:
    """Queue again a parent run that stopped waiting (for a person, in this child)."""
    try:
        if queue.requeue(parent):
            log("run_requeued", f"run {parent} queued again: its child ended", run=parent)
    except WorldError as exc:
        log("run_not_requeued", f"run {parent} could not be queued again: {exc}",
            run=parent, level="warning")


def needs_of(world: Any, claim: Any) -> list[str] | None:
    """What a run needs of its worker (to write on the row this worker hands back)."""
    from lwtool.runtime.needs import run_needs

    try:
        lwir = world.get_version(claim.version_id)
    except WorldError:
        return None
    return None if lwir is None else run_needs(lwir, claim.options.get("models") or {})


def export(world: Any, run_id: str, endpoint: str, log: WorkerLog) -> None:
    """Send a run this worker ended to an OTLP/HTTP endpoint; a failure is logged."""
    from lwtool.observe.otel import run_spans, send
    from lwtool.observe.otlp_send import ExportFailed

    try:
        found = run_spans(world, run_id)
        where = send(found, endpoint, 10.0)
    except (ExportFailed, WorldError) as exc:
        log("otel_failed", f"run {run_id}: cannot export its trace: {exc}", run=run_id,
            level="warning")
        return
    log("otel_exported", f"run {run_id}: {len(found)} spans exported to {where}", run=run_id)

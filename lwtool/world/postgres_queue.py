"""The PostgreSQL world's run queue: `lwtool run --enqueue` records a run to execute;
`lwtool worker` processes claim one at a time with `SELECT ... FOR UPDATE SKIP LOCKED`
(no two claim the same row, none waits for another) under a lease their heartbeat
renews. A run whose worker died is claimable again once its lease has run out; the
run's advisory lock keeps a slow worker and its successor from executing it at once,
and its event log keeps every committed step from running again.

States: queued -> claimed -> done | failed | waiting (a claimed run whose lease ran out
counts as queued; a waiting run is queued again by `lwtool respond --enqueue`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from lwtool.canonical.compact import dumps_text, loads


@dataclass(frozen=True)
class Claim:
    run_id: str
    version_id: str
    run_input: Any
    options: dict[str, Any]
    claims: int  # how many times the run was claimed, this claim included


class RunQueue:
    """The queue of one PostgreSQL world (`world._tx` and `world._read`)."""

    def __init__(self, world: Any) -> None:
        self.world = world

    def enqueue(self, run_id: str, version_id: str, run_input: Any,
                options: dict[str, Any]) -> None:
        from lwtool.world.base import RunConflict

        with self.world._tx() as conn:
            added = conn.execute(
                "INSERT INTO lwtool.queue (run_id, version_id, input, options, state, "
                "enqueued_at) VALUES (%s, %s, %s, %s, 'queued', %s) ON CONFLICT DO NOTHING "
                "RETURNING run_id", (run_id, version_id, dumps_text(run_input),
                                     dumps_text(options), time.time())).fetchone()
        if added is None:
            raise RunConflict(f"run {run_id} is queued already (choose a new run id)")

    def requeue(self, run_id: str) -> bool:
        """Queue a run that waits for a person again (its answer is in: a worker goes on
        with it); False when the queue does not hold it as waiting."""
        with self.world._tx() as conn:
            row = conn.execute("UPDATE lwtool.queue SET state = 'queued', worker = NULL, "
                               "lease_until = NULL, enqueued_at = %s WHERE run_id = %s AND "
                               "state = 'waiting' RETURNING run_id",
                               (time.time(), run_id)).fetchone()
        return row is not None

    def claim(self, worker: str, lease: float) -> Claim | None:
        """The oldest runnable run, claimed for `lease` seconds; None when there is none."""
        now = time.time()
        with self.world._tx() as conn:
            row = conn.execute(
                "UPDATE lwtool.queue SET state = 'claimed', worker = %s, lease_until = %s, "
                "claimed_at = %s, claims = claims + 1 WHERE run_id = (SELECT run_id FROM "
                "lwtool.queue WHERE state = 'queued' OR (state = 'claimed' AND lease_until "
                "< %s) ORDER BY enqueued_at, run_id FOR UPDATE SKIP LOCKED LIMIT 1) "
                "RETURNING run_id, version_id, input, options, claims",
                (worker, now + lease, now, now)).fetchone()
        if row is None:
            return None
        return Claim(row[0], row[1], loads(row[2]), loads(row[3]), int(row[4]))

    def renew(self, run_id: str, worker: str, lease: float) -> bool:
        """Extend this worker's lease; False when the run is no longer its own."""
        with self.world._tx(durable=False) as conn:
            moved = conn.execute("UPDATE lwtool.queue SET lease_until = %s WHERE run_id = %s "
                                 "AND worker = %s AND state = 'claimed' RETURNING run_id",
                                 (time.time() + lease, run_id, worker)).fetchone()
        return moved is not None

    def finish(self, run_id: str, worker: str, state: str) -> bool:
        """`done`, `failed`, `waiting` (for a person), or `queued` (handed back:
        another may take it at once); False when the run's claim is no longer this
        worker's."""
        with self.world._tx() as conn:
            ended = conn.execute("UPDATE lwtool.queue SET state = %s, lease_until = NULL "
                                 "WHERE run_id = %s AND worker = %s AND state = 'claimed' "
                                 "RETURNING run_id", (state, run_id, worker)).fetchone()
        return ended is not None

    def pending(self) -> int:
        """Runs not yet ended (queued or claimed)."""
        rows = self.world._read("SELECT count(*) FROM lwtool.queue WHERE state IN "
                                "('queued', 'claimed')")
        return int(rows[0][0])

    def holders(self) -> dict[str, tuple[str, str, float]]:
        """run id -> (state, worker, claimed at) of every run the queue has not ended."""
        return {r[0]: (r[1], r[2] or "", float(r[3] or 0.0)) for r in self.world._read(
            "SELECT run_id, state, worker, claimed_at FROM lwtool.queue WHERE state IN "
            "('queued', 'claimed')")}

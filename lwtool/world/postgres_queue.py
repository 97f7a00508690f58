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

# A row a worker may claim: it needs nothing, or only tools the worker has (its `serves`,
# the one parameter; NULL for a worker that takes anything). Either side NULL makes the
# containment NULL, which counts as served.
SERVED = "coalesce(needs::jsonb <@ %s::jsonb, true)"


# A claim this young may not hold its run's lock yet (the worker takes it as it starts):
# only an older one whose lock is free counts as its worker gone.
GRACE = 3.0
# The run's advisory lock key in SQL, as lwtool.world.postgres.advisory_key makes it
# (the first 8 bytes of the SHA-256 of `lwtool-run:<run id>`, signed); the try takes it
# for the claim's own transaction only: free means no process executes the run.
RUN_LOCK_KEY = ("('x' || left(encode(sha256(convert_to('lwtool-run:' || run_id, 'UTF8')), "
                "'hex'), 16))::bit(64)::bigint")
UNLOCKED = f"pg_try_advisory_xact_lock({RUN_LOCK_KEY})"


def needs_text(tools: list[str] | None) -> str | None:
    """Tool names as the JSON array `needs` and `serves` are (None stays NULL)."""
    return None if tools is None else dumps_text(sorted(set(tools)))


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
                options: dict[str, Any], needs: list[str] | None = None) -> None:
        """Queue a run; `needs`: the tools a worker must have to claim it."""
        self.enqueue_many([(run_id, version_id, run_input, options)], needs)

    def enqueue_many(self, runs: list[tuple[str, str, Any, dict[str, Any]]],
                     needs: list[str] | None = None) -> None:
        """Queue (run id, version id, input, options) of each run in one transaction:
        all of them, or (RunConflict: one is queued already) none."""
        from lwtool.world.base import RunConflict

        now, wanted = time.time(), needs_text(needs)
        with self.world._tx() as conn:  # an exception out of it rolls every insert back
            for run_id, version_id, run_input, options in runs:
                added = conn.execute(
                    "INSERT INTO lwtool.queue (run_id, version_id, input, options, state, "
                    "enqueued_at, needs) VALUES (%s, %s, %s, %s, 'queued', %s, %s) ON "
                    "CONFLICT DO NOTHING RETURNING run_id",
                    (run_id, version_id, dumps_text(run_input), dumps_text(options), now,
                     wanted)).fetchone()
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

    def claim(self, worker: str, lease: float, serves: list[str] | None = None
              ) -> Claim | None:
        """The oldest runnable run, claimed for `lease` seconds; None when there is none.
        Runnable: queued, or claimed by a worker that is gone: its lease ran out, or (a
        claim older than GRACE seconds) no process holds the run's lock, which the
        server lets go the moment its holder dies. `serves`: the tools the worker has (a
        run needing others is left to another); None takes any run."""
        now = time.time()
        with self.world._tx() as conn:
            row = conn.execute(
                "UPDATE lwtool.queue SET state = 'claimed', worker = %s, lease_until = %s, "
                "claimed_at = %s, claims = claims + 1 WHERE run_id = (SELECT run_id FROM "
                "lwtool.queue WHERE (state = 'queued' OR (state = 'claimed' AND (lease_until "
                f"< %s OR (claimed_at < %s AND {UNLOCKED})))) AND {SERVED} ORDER BY "
                "enqueued_at, run_id FOR UPDATE SKIP LOCKED LIMIT 1) "
                "RETURNING run_id, version_id, input, options, claims",
                (worker, now + lease, now, now, now - GRACE, needs_text(serves))).fetchone()
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

    def pending(self, serves: list[str] | None = None) -> int:
        """Runs not yet ended: claimed ones, and queued ones a worker with the tools
        `serves` could claim (None: every queued one)."""
        rows = self.world._read("SELECT count(*) FROM lwtool.queue WHERE state = 'claimed' "
                                f"OR (state = 'queued' AND {SERVED})", (needs_text(serves),))
        return int(rows[0][0])

    def holders(self) -> dict[str, tuple[str, str, float, list[str]]]:
        """run id -> (state, worker, claimed at, the tools it needs) of every run the
        queue has not ended."""
        return {r[0]: (r[1], r[2] or "", float(r[3] or 0.0), loads(r[4]) if r[4] else [])
                for r in self.world._read(
                    "SELECT run_id, state, worker, claimed_at, needs FROM lwtool.queue WHERE "
                    "state IN ('queued', 'claimed')")}

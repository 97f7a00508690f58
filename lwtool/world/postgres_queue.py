"""The PostgreSQL world's run queue: `lwtool run --enqueue` records a run to execute;
`lwtool worker` processes claim one at a time with `SELECT ... FOR UPDATE SKIP LOCKED`
(no two claim the same row, none waits for another) under a lease their heartbeat
renews. A run whose worker died is claimable again once its lease has run out; the
run's advisory lock keeps a slow worker and its successor from executing it at once,
and its event log keeps every committed step from running again.

Each run is on a named queue (`default` unless `--queue`); a worker claims from its
queues only. A queue with a `max_concurrent` (lwtool.queues, `lwtool queues NAME
--max-concurrent N`) has at most that many runs claimed at once across every worker: a
claim locks the limits' rows first, so two workers never both take the last place.

States: queued -> claimed -> done | failed | waiting (a claimed run whose lease ran out
counts as queued; a waiting run is queued again by `lwtool respond --enqueue`)."""

from __future__ import annotations

import time
from collections.abc import Callable
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
DEFAULT_QUEUE = "default"
# NOTIFY payload: the queue a run was queued on (a claim of it ended), or BRANCH_NOTE and
# the queue a branch was queued on
WORK_CHANNEL = "lwtool_work"
BRANCH_NOTE = "branch "
# NOTIFY payload: the id of a run whose claim ended (a parent waiting for its child
# hears its own child's end, lwtool.runtime.child_ends)
RUN_ENDS_CHANNEL = "lwtool_run_ends"
# After `WITH x AS (... RETURNING queue)`: tell the listening workers, a row for each
_NOTIFY_FROM = f"SELECT pg_notify('{WORK_CHANNEL}', queue) FROM"
# After `WITH ended AS (... RETURNING queue, run_id)`: and the run's waiting parent
_NOTIFY_ENDED = (f"SELECT pg_notify('{WORK_CHANNEL}', queue), "
                 f"pg_notify('{RUN_ENDS_CHANNEL}', run_id) FROM ended")
# The queue's state once the run ended with this status
CLAIM_END = {"completed": "done", "failed": "failed"}
# CTEs a run's final commit carries to end its worker's claim in the same transaction
# (lwtool.world.postgres_trips): only where the commit moved the run's head (its CTE
# `head`); `told` tells the listening workers (a row each claim ended)
ENDED_WITH_RUN = (
    "ended AS (UPDATE lwtool.queue SET state = %(claim_state)s, lease_until = NULL WHERE "
    "run_id = %(run)s AND worker = %(claim_worker)s AND state = 'claimed' AND EXISTS "
    f"(SELECT FROM head) RETURNING queue, run_id), told AS ({_NOTIFY_ENDED})")
# Those of the claim's queues (its one parameter) whose limit is reached
_FULL = ("SELECT q.name FROM lwtool.queues q WHERE q.name = ANY(%s) AND q.max_concurrent <= "
         "(SELECT count(*) FROM lwtool.queue c WHERE c.queue = q.name AND c.state = "
         "'claimed')")


def needs_text(tools: list[str] | None) -> str | None:
    """Tool names as the JSON array `needs` and `serves` are (None stays NULL)."""
    return None if tools is None else dumps_text(sorted(set(tools)))


def finish_statement(run_id: str, worker: str, state: str,
                     needs: list[str] | None = None) -> tuple[str, tuple[Any, ...]]:
    """End this worker's claim of the run with `state` (RunQueue.finish); a row when it
    did."""
    return ("WITH ended AS (UPDATE lwtool.queue SET state = %s, lease_until = NULL, needs = "
            "coalesce(%s, needs) WHERE run_id = %s AND worker = %s AND state = 'claimed' "
            f"RETURNING queue, run_id) {_NOTIFY_ENDED}",
            (state, needs_text(needs), run_id, worker))


@dataclass(frozen=True)
class Claim:
    run_id: str
    version_id: str
    run_input: Any
    options: dict[str, Any]
    claims: int  # how many times the run was claimed, this claim included
    queue: str = DEFAULT_QUEUE
    enqueued_at: float = 0.0


class RunQueue:
    """The queue of one PostgreSQL world (`world._tx` and `world._read`)."""

    def __init__(self, world: Any) -> None:
        self.world = world

    def enqueue(self, run_id: str, version_id: str, run_input: Any,
                options: dict[str, Any], needs: list[str] | None = None,
                queue: str = DEFAULT_QUEUE) -> None:
        """Queue a run; `needs`: the tools (and `model slot X`) a worker must have to
        claim it."""
        self.enqueue_many([(run_id, version_id, run_input, options)], needs, queue)

    def enqueue_many(self, runs: list[tuple[str, str, Any, dict[str, Any]]],
                     needs: list[str] | None = None, queue: str = DEFAULT_QUEUE) -> None:
        """Queue (run id, version id, input, options) of each run on `queue` in one
        transaction: all of them, or (RunConflict: one is queued already) none. Workers
        waiting for work are told at commit (NOTIFY)."""
        from lwtool.world.base import RunConflict

        now, wanted = time.time(), needs_text(needs)
        with self.world._tx() as conn:  # an exception out of it rolls every insert back
            for run_id, version_id, run_input, options in runs:
                added = conn.execute(
                    "INSERT INTO lwtool.queue (run_id, version_id, input, options, state, "
                    "enqueued_at, needs, queue) VALUES (%s, %s, %s, %s, 'queued', %s, %s, %s) "
                    "ON CONFLICT DO NOTHING RETURNING run_id",
                    (run_id, version_id, dumps_text(run_input), dumps_text(options), now,
                     wanted, queue)).fetchone()
                if added is None:
                    raise RunConflict(f"run {run_id} is queued already (choose a new run id)")
            conn.execute("SELECT pg_notify(%s, %s)", (WORK_CHANNEL, queue))

    def requeue(self, run_id: str) -> bool:
        """Queue a run that waits for a person again (its answer is in: a worker goes on
        with it); False when the queue does not hold it as waiting."""
        return bool(self.world._one_trip([(
            f"WITH queued AS (UPDATE lwtool.queue SET state = 'queued', worker = NULL, "
            "lease_until = NULL, enqueued_at = %s WHERE run_id = %s AND state = 'waiting' "
            f"RETURNING queue) {_NOTIFY_FROM} queued", (time.time(), run_id))]))

    def requeue_run(self, run_id: str, version_id: str, run_input: Any,
                    options: dict[str, Any], needs: list[str], queue: str | None) -> bool:
        """Queue a run that exists again (`lwtool retry|replay RUN --enqueue`): on its
        queue, or `queue`; False when a worker holds it now."""
        return bool(self.world._one_trip([(
            "WITH queued AS (INSERT INTO lwtool.queue (run_id, version_id, input, options, "
            "state, enqueued_at, needs, queue) VALUES (%s, %s, %s, %s, 'queued', %s, %s, %s) "
            "ON CONFLICT (run_id) DO UPDATE SET state = 'queued', worker = NULL, lease_until "
            "= NULL, enqueued_at = excluded.enqueued_at, needs = excluded.needs, queue = "
            "coalesce(%s, lwtool.queue.queue) WHERE lwtool.queue.state <> 'claimed' "
            f"RETURNING queue) {_NOTIFY_FROM} queued",
            (run_id, version_id, dumps_text(run_input), dumps_text(options), time.time(),
             needs_text(needs), queue or DEFAULT_QUEUE, queue))]))

    def claim(self, worker: str, lease: float, serves: list[str] | None = None,
              queues: list[str] | None = None) -> Claim | None:
        """The oldest runnable run of `queues` (None: the default queue), claimed for
        `lease` seconds; None when there is none. Runnable: queued on a queue below its
        limit, or claimed by a worker that is gone: its lease ran out, or (a claim older
        than GRACE seconds) no process holds the run's lock, which the server lets go
        the moment its holder dies (taking a dead worker's run over keeps the count).
        `serves`: the tools the worker has (a run needing others is left to another);
        None takes any run."""
        now, names = time.time(), queues or [DEFAULT_QUEUE]
        rows = self.world._one_trip([
            # the limits of the worker's limited queues, locked until the claim commits
            # (claims on one limited queue take turns; the next statement counts anew)
            ("SELECT name FROM lwtool.queues WHERE name = ANY(%s) AND max_concurrent IS NOT "
             "NULL ORDER BY name FOR UPDATE", (names,)),
            ("UPDATE lwtool.queue SET state = 'claimed', worker = %s, lease_until = %s, "
             "claimed_at = %s, claims = claims + 1 WHERE run_id = (SELECT run_id FROM "
             "lwtool.queue WHERE queue = ANY(%s) AND ((state = 'queued' AND queue NOT IN "
             f"({_FULL})) OR (state = 'claimed' AND (lease_until < %s OR (claimed_at < %s AND "
             f"{UNLOCKED})))) AND {SERVED} ORDER BY enqueued_at, run_id FOR UPDATE SKIP "
             "LOCKED LIMIT 1) RETURNING run_id, version_id, input, options, claims, queue, "
             "enqueued_at",
             (worker, now + lease, now, names, names, now, now - GRACE, needs_text(serves)))])
        if not rows:
            return None
        row = rows[0]
        return Claim(row[0], row[1], loads(row[2]), loads(row[3]), int(row[4]), row[5],
                     float(row[6]))

    def claim_run(self, run_id: str, worker: str, lease: float) -> Claim | None:
        """Claim this run if it is claimable (queued, or claimed by a worker that is
        gone, as `claim` counts them), whatever its queue's limit: a run's child, which
        the worker executing the run takes in the slot the run lends it while it waits.
        None when it is not claimable now."""
        now = time.time()
        rows = self.world._one_trip([(
            "UPDATE lwtool.queue SET state = 'claimed', worker = %s, lease_until = %s, "
            "claimed_at = %s, claims = claims + 1 WHERE run_id = (SELECT run_id FROM "
            "lwtool.queue WHERE run_id = %s AND (state = 'queued' OR (state = 'claimed' AND "
            f"(lease_until < %s OR (claimed_at < %s AND {UNLOCKED})))) FOR UPDATE SKIP "
            "LOCKED) RETURNING run_id, version_id, input, options, claims, queue, enqueued_at",
            (worker, now + lease, now, run_id, now, now - GRACE))])
        if not rows:
            return None
        row = rows[0]
        return Claim(row[0], row[1], loads(row[2]), loads(row[3]), int(row[4]), row[5],
                     float(row[6]))

    def state_of(self, run_id: str) -> tuple[str, float] | None:
        """(state, enqueued_at) of a run the queue holds; None when it holds none."""
        rows = self.world._read("SELECT state, enqueued_at FROM lwtool.queue WHERE run_id = %s",
                                (run_id,))
        return (str(rows[0][0]), float(rows[0][1])) if rows else None

    def renew(self, run_id: str, worker: str, lease: float) -> bool:
        """Extend this worker's lease; False when the run is no longer its own."""
        return bool(self.world._one_trip([(
            "UPDATE lwtool.queue SET lease_until = %s WHERE run_id = %s AND worker = %s AND "
            "state = 'claimed' RETURNING run_id", (time.time() + lease, run_id, worker))],
            durable=False))

    def ended_by(self, run_id: str, worker: str) -> bool:
        """Whether `worker`'s claim of the run ended (the run's final commit ended it: a
        renewal racing that commit, which the worker has not heard back from yet, is no
        lost lease; a takeover names another worker)."""
        return bool(self.world._read(
            "SELECT 1 FROM lwtool.queue WHERE run_id = %s AND worker = %s AND state IN "
            "('done', 'failed', 'waiting')", (run_id, worker)))

    def finish(self, run_id: str, worker: str, state: str,
               needs: list[str] | None = None) -> bool:
        """`done`, `failed`, `waiting` (for a person), or `queued` (handed back:
        another may take it at once; `needs`, what this worker found it lacks, is then
        written to the row, so no worker without it claims the run again); False when
        the run's claim is no longer this worker's."""
        # told: a place on its queue is free, or the run is back
        return bool(self.world._one_trip([finish_statement(run_id, worker, state, needs)]))

    def pending(self, serves: list[str] | None = None, queues: list[str] | None = None
                ) -> int:
        """Runs of `queues` (None: every queue) not yet ended: claimed ones, and queued
        ones a worker with the tools `serves` could claim (None: every queued one)."""
        rows = self.world._read("SELECT count(*) FROM lwtool.queue WHERE (state = 'claimed' "
                                f"OR (state = 'queued' AND {SERVED})) AND (%s::text[] IS NULL "
                                "OR queue = ANY(%s))", (needs_text(serves), queues, queues))
        return int(rows[0][0])

    def holders(self) -> dict[str, Held]:
        """run id -> what the queue holds of every run it has not ended."""
        return {r[0]: Held(r[1], r[2] or "", float(r[3] or 0.0),
                           loads(r[4]) if r[4] else [], r[5])
                for r in self.world._read(
                    "SELECT run_id, state, worker, claimed_at, needs, queue FROM lwtool.queue "
                    "WHERE state IN ('queued', 'claimed')")}

    def version_of(self, run_id: str) -> str | None:
        """The version a queued run (one no worker has started yet, too) runs."""
        rows = self.world._read("SELECT version_id FROM lwtool.queue WHERE run_id = %s",
                                (run_id,))
        return str(rows[0][0]) if rows else None

    def queues_of(self) -> dict[str, str]:
        """run id -> its queue, of every run the queue holds (ended ones included)."""
        return dict(self.world._read("SELECT run_id, queue FROM lwtool.queue"))

    def depths(self) -> dict[str, dict[str, int]]:
        """queue -> state -> how many runs (queued, claimed, waiting), of every queue
        that ever held a run or has a limit."""
        out: dict[str, dict[str, int]] = {name: {} for (name,) in self.world._read(
            "SELECT name FROM lwtool.queues")}
        for queue, state, count in self.world._read(
                "SELECT queue, state, count(*) FROM lwtool.queue GROUP BY queue, state"):
            states = out.setdefault(queue, {})
            if state in ("queued", "claimed", "waiting"):
                states[state] = int(count)
        return out

    def limits(self) -> dict[str, int | None]:
        """queue -> its max_concurrent (None: no limit) of every queue given one."""
        return {r[0]: r[1] for r in self.world._read(
            "SELECT name, max_concurrent FROM lwtool.queues ORDER BY name")}

    def set_limit(self, queue: str, max_concurrent: int | None) -> None:
        """At most `max_concurrent` runs of `queue` claimed at once, across every worker
        (None: no limit)."""
        with self.world._tx() as conn:
            conn.execute("INSERT INTO lwtool.queues VALUES (%s, %s) ON CONFLICT (name) DO "
                         "UPDATE SET max_concurrent = excluded.max_concurrent",
                         (queue, max_concurrent))
            conn.execute("SELECT pg_notify(%s, %s)", (WORK_CHANNEL, queue))


def listen(url: str, channel: str, stop: Callable[[], bool], heard: Callable[[str], None],
           every: float = 0.5) -> None:
    """Call `heard(payload)` for each NOTIFY on `channel`, on a connection of its own,
    until `stop()`; returns when the server is lost (the caller polls meanwhile, and may
    listen again). On WORK_CHANNEL: a run queued (payload: its queue) or a branch
    (BRANCH_NOTE and the queue), or a claim ended."""
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"LISTEN {channel}")
            while not stop():
                for note in conn.notifies(timeout=every):
                    heard(note.payload)
    except psycopg.Error:
        return


@dataclass(frozen=True)
class Held:
    """A run the queue has not ended."""
    state: str  # queued | claimed
    worker: str  # "" while queued
    since: float  # claimed at
    needs: list[str]  # tools and `model slot X` a worker must have to claim it
    queue: str

"""The PostgreSQL world's branch queue: the parallel branches of runs that `lwtool worker`
processes execute, so that the branches of one run spread over many workers and
machines (lwtool.runtime.branches).

The worker executing a run (its owner) queues each branch of a parallel step it
reaches: the run, the branch's step path prefix (`fan[3].`), the parallel step it
belongs to and its item; in the same statement (`pump`) it claims as many of its run's
branches as it has free slots for, and writes the ends of those it executed. Another
worker claims a queued branch with `SELECT ... FOR UPDATE SKIP LOCKED` under a lease
its heartbeat renews, executes the branch body, appending the branch's events to the
run's log, and ends the row `done` (with the branch's output) or `failed` (with its
failure). The owner reads the ends and fans in. A branch
whose worker died is claimable again at once (a registered worker's lock is gone with
it, lwtool.world.postgres_workers) or once its lease has run out: the next worker
replays the branch's committed steps from the log and runs the one in flight again
(at-least-once); a StepCompleted is unique per run and step path, so a slow worker and
its successor cannot both commit one. A branch goes on its run's queue: only workers
of that queue claim it. Each end is announced with NOTIFY on
`lwtool_branch_ends` (payload: the run id), so owners wait without polling hard.

States: queued -> claimed -> done | failed | waiting, or cancelled (a fail_fast group
that failed no longer needs it); a claimed branch whose lease ran out counts as
queued."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwtool.canonical.compact import dumps_text, loads
from lwtool.world.postgres_queue import (
    BRANCH_NOTE,
    DEFAULT_QUEUE,
    GRACE,
    SERVED,
    WORK_CHANNEL,
    listen,
    needs_text,
)
from lwtool.world.postgres_workers import WORKER_GONE

ENDS_CHANNEL = "lwtool_branch_ends"  # NOTIFY payload: the run id of a branch that ended


def runnable(now: str, grace: str) -> str:
    """SQL: a branch any worker may claim: queued, or claimed by a worker that is gone
    (its lease ran out, or, a claim older than GRACE, the worker's lock is free). `now`
    and `grace` are the placeholders of the time and of the time GRACE ago."""
    return (f"(state = 'queued' OR (state = 'claimed' AND (lease_until < {now} OR "
            f"(claimed_at < {grace} AND {WORKER_GONE}))))")


_MINE = "CASE WHEN r.mine THEN {} END"
_PUMP = (
    "WITH ended AS (UPDATE lwtool.branches b SET state = e.state, result = e.result, "
    "lease_until = NULL FROM jsonb_to_recordset(%(ends)s::jsonb) AS e(prefix text, state "
    "text, result text) WHERE b.run_id = %(run)s AND b.prefix = e.prefix AND b.worker = "
    "%(worker)s AND b.state = 'claimed'), "
    "queued AS (INSERT INTO lwtool.branches (run_id, prefix, parallel, item, history, "
    "state, enqueued_at, needs, queue, worker, lease_until, claimed_at, claims) SELECT "
    "%(run)s, r.prefix, r.parallel, r.item, r.history, CASE WHEN r.mine THEN 'claimed' "
    "ELSE 'queued' END, r.at, r.needs, coalesce((SELECT q.queue FROM lwtool.queue q WHERE "
    f"q.run_id = %(run)s), %(default)s), {_MINE.format('%(worker)s')}, "
    f"{_MINE.format('%(until)s::double precision')}, "
    f"{_MINE.format('%(now)s::double precision')}, CASE WHEN r.mine THEN 1 ELSE 0 END "
    "FROM jsonb_to_recordset(%(fresh)s::jsonb) AS r(prefix text, parallel text, item text, "
    "history boolean, at double precision, needs text, mine boolean) ON CONFLICT (run_id, "
    "prefix) DO UPDATE SET state = 'queued', history = true WHERE lwtool.branches.state IN "
    "('cancelled', 'waiting') RETURNING prefix, parallel, item, history, claims, state, "
    "queue), "
    # picked once (MATERIALIZED): a LIMIT ... SKIP LOCKED subquery the plan scans again
    # for each row would pick (and claim) more rows than its limit
    "picked AS MATERIALIZED (SELECT prefix FROM lwtool.branches WHERE run_id = %(run)s AND "
    f"prefix = ANY(%(stealable)s) AND {runnable('%(now)s', '%(grace)s')} ORDER BY "
    "enqueued_at, prefix FOR UPDATE SKIP LOCKED LIMIT %(steal)s), "
    "stolen AS (UPDATE lwtool.branches b SET state = 'claimed', worker = %(worker)s, "
    "lease_until = %(until)s, claimed_at = %(now)s, claims = b.claims + 1 FROM picked "
    "WHERE b.run_id = %(run)s AND b.prefix = picked.prefix RETURNING b.prefix, b.parallel, "
    "b.item, b.history, b.claims), "
    "told AS (SELECT pg_notify(%(channel)s, %(note)s || queue) FROM (SELECT DISTINCT queue "
    "FROM queued WHERE state = 'queued') q) "
    "SELECT prefix, parallel, item, history, claims FROM queued WHERE state = 'claimed' "
    "UNION ALL SELECT prefix, parallel, item, history, claims FROM stolen "
    "UNION ALL SELECT NULL, NULL, NULL, NULL, NULL FROM told")


@dataclass(frozen=True)
class BranchTask:
    run_id: str
    prefix: str  # the branch's step path prefix: `fan[3].`
    parallel: list[str]  # step ids from the top of the LWIR down to the parallel step
    item: Any
    history: bool  # the owner's log had events under `prefix` when it enqueued
    claims: int  # this claim included


class BranchQueue:
    """The branch queue of one PostgreSQL world (`world._tx` and `world._read`)."""

    def __init__(self, world: Any) -> None:
        self.world = world

    def claim(self, worker: str, lease: float, serves: list[str] | None = None,
              queues: list[str] | None = None, most: int = 1,
              besides: list[str] | None = None) -> list[BranchTask]:
        """The oldest runnable branches of `queues` (None: the default queue) whose tools
        are among `serves` (None: any), `most` at most, claimed for `lease` seconds in one
        statement (none when none is); none of the runs `besides` (their owners, this
        worker's runs, take their own: `pump`)."""
        return self.end_and_claim([], worker, lease, serves, queues, most, besides)[0]

    def end_and_claim(self, ends: list[tuple[BranchTask, str, Any]], worker: str,
                      lease: float, serves: list[str] | None = None,
                      queues: list[str] | None = None, most: int = 1,
                      besides: list[str] | None = None
                      ) -> tuple[list[BranchTask], set[tuple[str, str]]]:
        """End this worker's claim of each of `ends` ((task, state, result): done,
        failed or waiting, its owner told by NOTIFY) and `claim` (`most` 0: none), in one
        statement: a helper's branch end rides with its next claim. Returns the branches
        claimed, and the (run id, prefix) of the ends written (an end missing lost its
        lease to another worker). Not flushed: an end a server crash loses leaves the
        branch claimed; its next claim replays it from the run's log."""
        now = time.time()
        rows = self.world._one_trip([(  # not flushed: a claim lost in a crash is queued again
            "WITH ended AS (UPDATE lwtool.branches b SET state = e.state, result = e.result, "
            "lease_until = NULL FROM jsonb_to_recordset(%s::jsonb) AS e(run_id text, prefix "
            "text, state text, result text) WHERE b.run_id = e.run_id AND b.prefix = "
            "e.prefix AND b.worker = %s AND b.state = 'claimed' RETURNING b.run_id, "
            "b.prefix), told AS (SELECT pg_notify(%s, run_id) FROM (SELECT DISTINCT run_id "
            "FROM ended) x), "
            # never its own claims (one ending here must not be claimed again with it)
            "picked AS MATERIALIZED (SELECT run_id, prefix FROM lwtool.branches WHERE "
            f"queue = ANY(%s) AND {runnable('%s', '%s')} AND {SERVED} AND run_id <> "
            "ALL(%s) AND worker IS DISTINCT FROM %s ORDER BY enqueued_at, run_id, prefix FOR "
            "UPDATE SKIP LOCKED LIMIT %s), claimed AS (UPDATE lwtool.branches b SET state = "
            "'claimed', worker = %s, lease_until = %s, claimed_at = %s, claims = b.claims + "
            "1 FROM picked WHERE b.run_id = picked.run_id AND b.prefix = picked.prefix "
            "RETURNING b.run_id, b.prefix, b.parallel, b.item, b.history, b.claims, "
            "b.enqueued_at) SELECT true, run_id, prefix, parallel, item, history, claims, "
            "enqueued_at FROM claimed UNION ALL SELECT false, run_id, prefix, NULL, NULL, "
            "NULL, NULL, NULL FROM ended UNION ALL SELECT false, NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL FROM told",
            (dumps_text([{"run_id": task.run_id, "prefix": task.prefix, "state": state,
                          "result": dumps_text(result)} for task, state, result in ends]),
             worker, ENDS_CHANNEL, queues or [DEFAULT_QUEUE], now, now - GRACE,
             needs_text(serves), besides or [], worker, most, worker, now + lease, now))],
            durable=False)
        claimed = sorted((row[1:] for row in rows if row[0]),
                         key=lambda row: (row[6], row[0], row[1]))  # oldest first
        return ([BranchTask(row[0], row[1], loads(row[2]), loads(row[3]), bool(row[4]),
                            int(row[5])) for row in claimed],
                {(row[1], row[2]) for row in rows if not row[0] and row[1] is not None})

    def pump(self, run_id: str, worker: str, lease: float, ends: list[dict[str, Any]],
             fresh: list[tuple[str, list[str], Any, bool, list[str] | None, bool]],
             stealable: list[str], steal: int) -> list[BranchTask]:
        """The owner's side, in one statement: its branches that ended (`ends`: {prefix,
        state, result}) written; `fresh` branches ((prefix, parallel, item, history,
        needs, mine) each) queued, those `mine` claimed for this worker at once (a row
        the queue has already, a resumed owner's, is left as it is and not claimed,
        unless it was cancelled or waited for a person: then it is queued again); and of
        the run's branches `stealable`, `steal` runnable ones at most claimed for it.
        Returns the branches claimed; the workers of the run's queue are told of those
        left queued."""
        now = time.time()
        rows = self.world._one_trip([(_PUMP, {
            "run": run_id, "worker": worker, "until": now + lease, "now": now,
            "grace": now - GRACE, "default": DEFAULT_QUEUE, "channel": WORK_CHANNEL,
            "note": BRANCH_NOTE, "stealable": stealable, "steal": steal,
            "ends": dumps_text([{**end, "result": dumps_text(end["result"])}
                                for end in ends]),
            "fresh": dumps_text([{"prefix": prefix, "parallel": dumps_text(parallel),
                                  "item": dumps_text(item), "history": history,
                                  "at": now + n * 1e-6, "needs": needs_text(needs),
                                  "mine": mine} for n, (prefix, parallel, item, history,
                                                        needs, mine) in enumerate(fresh)])})],
            durable=False)
        return [BranchTask(run_id, row[0], loads(row[1]), loads(row[2]), bool(row[3]),
                           int(row[4])) for row in rows if row[0] is not None]

    def renew(self, task: BranchTask, worker: str, lease: float) -> bool:
        """Extend this worker's lease; False when the branch is no longer its own."""
        return bool(self.world._one_trip([(
            "UPDATE lwtool.branches SET lease_until = %s WHERE run_id = %s AND prefix = %s AND "
            "worker = %s AND state = 'claimed' RETURNING prefix",
            (time.time() + lease, task.run_id, task.prefix, worker))], durable=False))

    def listen_ends(self, stop: Callable[[], bool], heard: Callable[[str], None],
                    every: float = 0.5) -> None:
        """Call `heard(run_id)` as branches of runs end (NOTIFY from `end_and_claim`), on a
        connection of its own, until `stop()`; returns when the server is lost (the
        caller looks at the table instead, and may listen again)."""
        listen(self.world.url, ENDS_CHANNEL, stop, heard, every)

    def ends(self, run_id: str, prefixes: list[str]) -> dict[str, tuple[str, Any]]:
        """prefix -> (state, result) of those of `prefixes` that have ended."""
        rows = self.world._read(
            "SELECT prefix, state, result FROM lwtool.branches WHERE run_id = %s AND prefix = "
            "ANY(%s) AND state IN ('done', 'failed', 'waiting')", (run_id, prefixes))
        return {r[0]: (r[1], loads(r[2]) if r[2] is not None else None) for r in rows}

    def cancel(self, run_id: str, prefixes: list[str]) -> None:
        """Branches not yet claimed that nobody waits for any more."""
        self.world._one_trip([("UPDATE lwtool.branches SET state = 'cancelled' WHERE run_id "
                               "= %s AND prefix = ANY(%s) AND state = 'queued'",
                               (run_id, prefixes))], durable=False)

    def holders(self) -> dict[str, list[tuple[str, str, float]]]:
        """run id -> [(branch prefix, worker, claimed at)] of branches being executed."""
        out: dict[str, list[tuple[str, str, float]]] = {}
        for run_id, prefix, worker, since in self.world._read(
                "SELECT run_id, prefix, worker, claimed_at FROM lwtool.branches WHERE state = "
                "'claimed' ORDER BY run_id, claimed_at"):
            out.setdefault(run_id, []).append((prefix, worker or "", float(since or 0.0)))
        return out

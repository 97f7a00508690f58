"""The workers of a PostgreSQL world (`lwtool workers`): each `lwtool worker` registers a
row (`lwtool.workers`: name, host, pid, queues, tools, start, last heartbeat, runs and
branches in hand) and holds a session advisory lock named after it on a connection of
its own for as long as it lives. The server lets go of that lock the moment the process
dies (or its machine drops off the network and the connection ends), so a worker is
live exactly while its lock is held: no timeout decides it. The branch queue takes a
registered worker's branches over as soon as its lock is free (WORKER_GONE); the run
queue does the same with each run's own lock (lwtool.world.postgres_queue)."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from lwtool.canonical.compact import dumps_text, loads
from lwtool.world.base import WorldError
from lwtool.world.postgres_keys import advisory_key

PURPOSE = "worker"  # the application_name of the connection holding a worker's lock
FORGET_AFTER = 86400.0  # seconds after its last heartbeat a dead worker's row is removed

# A worker's lock key in SQL from its name (`worker` or `w.name`), as worker_key makes it
_KEY = ("('x' || left(encode(sha256(convert_to('lwtool-worker:' || {name}, 'UTF8')), "
        "'hex'), 16))::bit(64)::bigint")
# In a claim: the claim's worker registered, and its lock is free (taken for the
# claim's transaction only). A worker that never registered (an older lwtool) is left
# to its lease.
WORKER_GONE = (f"(EXISTS (SELECT 1 FROM lwtool.workers w WHERE w.name = worker) AND "
               f"pg_try_advisory_xact_lock({_KEY.format(name='worker')}))")
# In a read: whether the lock of worker `w` is held by a live session
_HELD = ("EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
         "AND l.objsubid = 1 AND l.database = (SELECT oid FROM pg_database WHERE datname = "
         "current_database()) AND l.classid::bigint = (({key} >> 32) & 4294967295) AND "
         "l.objid::bigint = ({key} & 4294967295))").format(key=_KEY.format(name="w.name"))


def worker_key(name: str) -> int:
    return advisory_key(f"lwtool-worker:{name}")


@dataclass(frozen=True)
class WorkerRow:
    name: str
    host: str
    pid: int
    queues: list[str]
    serves: list[str] | None  # the tools and model slots it has (None: it takes any run)
    started_at: float
    seen_at: float  # its last heartbeat
    runs: int
    branches: int
    live: bool

    def to_json(self) -> dict[str, Any]:
        return {"worker": self.name, "host": self.host, "pid": self.pid,
                "queues": self.queues, "serves": self.serves, "startedAt": self.started_at,
                "seenAt": self.seen_at, "runs": self.runs, "branches": self.branches,
                "live": self.live}


class WorkerRegistration:
    """One worker's row and lock: `join` at start, `beat` as it goes, `leave` at the end."""

    def __init__(self, world: Any, name: str, queues: list[str],
                 serves: list[str] | None) -> None:
        self.world, self.name, self.queues, self.serves = world, name, queues, serves
        self.key = worker_key(name)
        self._conn: Any = None

    def join(self) -> None:
        """Take the worker's lock and write its row (WorldError: a live worker of that
        name holds it already); rows of workers dead for a day are removed."""
        import psycopg

        conn = self.world._lock_connection(PURPOSE)
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
        except psycopg.Error as exc:
            conn.close()
            raise WorldError(f"cannot register worker {self.name}: {exc}") from None
        if not (got and got[0]):
            self.world._release_lock(conn, self.key, False, PURPOSE)
            raise WorldError(f"a live worker named {self.name} is registered already")
        self._conn = conn
        now = time.time()
        host, _, pid = self.name.rpartition(":")
        with self.world._tx() as tx:
            tx.execute("INSERT INTO lwtool.workers (name, host, pid, queues, serves, "
                       "started_at, seen_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT "
                       "(name) DO UPDATE SET host = excluded.host, pid = excluded.pid, queues "
                       "= excluded.queues, serves = excluded.serves, started_at = "
                       "excluded.started_at, seen_at = excluded.seen_at, runs = 0, branches "
                       "= 0", (self.name, host or socket.gethostname(),
                               int(pid) if pid.isdigit() else os.getpid(),
                               dumps_text(self.queues),
                               None if self.serves is None else dumps_text(self.serves),
                               now, now))
            tx.execute(f"DELETE FROM lwtool.workers w WHERE seen_at < %s AND NOT {_HELD}",
                       (now - FORGET_AFTER,))

    def beat(self, runs: int, branches: int) -> None:
        """Record a heartbeat and what the worker has in hand; a lock connection the
        server closed (a restart) is replaced and the lock taken again."""
        from lwtool.world.postgres import _hung_up

        if self._conn is None or _hung_up(self._conn):
            self._conn = None
            self.join()
        with self.world._tx(durable=False) as tx:
            tx.execute("UPDATE lwtool.workers SET seen_at = %s, runs = %s, branches = %s "
                       "WHERE name = %s", (time.time(), runs, branches, self.name))

    def leave(self) -> None:
        """Remove the row and let go of the lock (best effort: a world that cannot be
        reached is left to see the lock gone)."""
        try:
            with self.world._tx() as tx:
                tx.execute("DELETE FROM lwtool.workers WHERE name = %s", (self.name,))
        except WorldError:
            pass
        if self._conn is not None:
            self.world._release_lock(self._conn, self.key, True, PURPOSE)
            self._conn = None


def list_workers(world: Any, include_gone: bool = False) -> list[WorkerRow]:
    """The registered workers, oldest first: the live ones (their lock held), and with
    `include_gone` those whose process ended without leaving (killed)."""
    rows = world._read("SELECT name, host, pid, queues, serves, started_at, seen_at, runs, "
                       f"branches, {_HELD} FROM lwtool.workers w ORDER BY started_at, name")
    # a worker that is gone holds nothing, whatever its last heartbeat counted
    out = [WorkerRow(r[0], r[1], int(r[2]), _names(r[3]), _names(r[4]) if r[4] else None,
                     float(r[5]), float(r[6]), int(r[7]) if r[9] else 0,
                     int(r[8]) if r[9] else 0, bool(r[9]))
           for r in rows]
    return [w for w in out if w.live or include_gone]


def _names(text: Any) -> list[str]:
    """A row's JSON list of names (queues, tools); `["?"]` for one that is not (a row
    written by hand, or by something else): listed, never a traceback."""
    try:
        value = loads(text)
    except (ValueError, TypeError):
        return ["?"]
    return [str(v) for v in value] if isinstance(value, list) else ["?"]

"""The PostgreSQL world: the World and InspectedWorld protocols over one database, for
runs that outgrow one machine (`lwtool.postgres_world(url)`, `--world postgresql://`).

Versions, runs, events (keyed by run and seq, hash-chained as in the local world: the
same `lwtool.world.chain`) and artifacts (in 1 MiB `bytea` chunks) are tables of the
schema `lwtool` (lwtool/world/postgres_schema.py). A commit is one transaction; strict
durability commits with `synchronous_commit = on`, process durability with `off` (a
killed lwtool process loses nothing either way: the server holds the commit; only a
crash of the server may lose the last `off` commits). A run's lock is a session-level
advisory lock held on a connection of its own: the server drops it when the holding
process dies, so a killed run can be resumed at once from any machine. A run whose
lock connection the server closed (a restart) commits nothing more (RunLockLost):
another process may have taken the run meanwhile. Memory stores, scratch and skills
stay files in `data_dir` on the machine that runs a session."""

from __future__ import annotations

import hashlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lwtool.canonical.compact import dumps_text
from lwtool.world import postgres_trips as trips
from lwtool.world.base import (
    DEFAULT_DURABILITY,
    ArtifactMissing,
    Event,
    NewEvent,
    RunExists,
    RunLocked,
    RunLockLost,
    RunNotFound,
    RunRecord,
    RunStatusChanged,
    StepCommittedElsewhere,
    StoreDamaged,
    StoreUnavailable,
    check_durability,
    check_run_id,
)
from lwtool.world.chain import GENESIS, chain_break
from lwtool.world.local_artifacts import ARTIFACT_REF
from lwtool.world.local_events import chained, read_events, run_record
from lwtool.world.postgres_inspected import InspectedRows
from lwtool.world.postgres_keys import CHUNK, run_lock_key
from lwtool.world.postgres_queue import CLAIM_END, finish_statement
from lwtool.world.postgres_trips import Statement
from lwtool.world.postgres_url import reason_of, secrets_of, where
from lwtool.world.postgres_versions import KEPT, VersionRows

DEFAULT_DATA_DIR = ".little-workflow"
DEFAULT_MAX_CONCURRENT_STEPS = 32
OPTIMISTIC = 3  # appends tried at the head as read before one waits for the run's lock
POOL_WAIT = 10.0  # seconds to wait for a connection (the pool reconnecting) before failing
_RUN_COLUMNS = "run_id, version_id, status, created_at, updated_at, input, options"


class PostgresWorld(VersionRows, InspectedRows):
    """The World over PostgreSQL; `data_dir` holds what stays per machine (memory,
    scratch, skills cache)."""

    def __init__(self, url: str, data_dir: str | Path = DEFAULT_DATA_DIR,
                 max_concurrent_steps: int = DEFAULT_MAX_CONCURRENT_STEPS,
                 durability: str = DEFAULT_DURABILITY, pool_size: int = 8) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
        from psycopg_pool import ConnectionPool

        from lwtool.world.postgres_schema import OutdatedSchema, ensure_schema

        if max_concurrent_steps < 1:
            raise ValueError("max_concurrent_steps must be at least 1")
        self.url = url
        self.data_dir = Path(data_dir)
        self.max_concurrent_steps = max_concurrent_steps
        self.durability = check_durability(durability)
        self.read_only = False
        self._where, self._secrets = where(url), secrets_of(url)
        try:
            conninfo_to_dict(url)
        except psycopg.Error as exc:  # libpq's words may quote the password: taken out
            reason = reason_of(exc, self._secrets)
            if "percent" in reason:
                reason += " (a `%` in a URL starts an escape: write `%25` for `%` itself)"
            raise StoreUnavailable(f"the PostgreSQL URL for {self._where} is not valid: "
                                   f"{reason}") from None
        try:
            first = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot reach PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None
        try:
            ensure_schema(first)
        except OutdatedSchema as exc:
            raise StoreUnavailable(f"PostgreSQL at {self._where}: {exc}") from None
        except RuntimeError as exc:
            raise StoreUnavailable(f"PostgreSQL at {self._where}: {exc}") from None
        except psycopg.Error as exc:
            raise StoreUnavailable(f"PostgreSQL at {self._where} refused lwtool's schema: "
                                   f"{reason_of(exc, self._secrets)}") from None
        finally:
            first.close()
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, open=True,
                                    kwargs={"autocommit": True}, timeout=POOL_WAIT)
        # for commits of process durability: the session commits without waiting for
        # the server's flush (a killed lwtool process loses nothing either way)
        self._relaxed = ConnectionPool(url, min_size=0, max_size=pool_size, open=True,
                                       kwargs={"autocommit": True,
                                               "options": "-c synchronous_commit=off"},
                                       timeout=POOL_WAIT)
        # connections that held advisory locks, kept between uses, by what they hold
        # (its application_name: "run lock"; "model places", lwtool.world.postgres_limits)
        self._lock_idle: dict[str, list[Any]] = {}
        self._held: dict[str, Any] = {}  # run id -> the connection holding its lock
        self._guard = threading.Lock()
        # called with (run id, events) after each commit of events (a worker's metrics)
        self.on_commit: Callable[[str, list[Event]], None] | None = None
        # what this process knows and need not ask again: versions stored (immutable),
        # their checked text, and the head each run was at after its last commit here
        self._versions: set[str] = set()
        self._version_texts: dict[str, str] = {}
        self._version_records: dict[str, str] = {}
        self._heads: dict[str, tuple[int, str]] = {}
        self._run_guards: dict[str, threading.Lock] = {}
        # run id -> the worker whose queue claim its final commit ends; "" once ended
        self._claims: dict[str, str] = {}

    # -- connections ------------------------------------------------------------------

    @contextmanager
    def _tx(self, durable: bool = True) -> Iterator[Any]:
        import psycopg

        try:
            with self._pool.connection() as conn, conn.transaction():
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit = off")
                yield conn
        except psycopg.OperationalError as exc:
            self._recover()
            raise StoreUnavailable(f"PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None

    def _one_trip(self, statements: Sequence[Statement], durable: bool = True,
                  before: Callable[[], None] | None = None) -> list[Any]:
        """Run `statements` as one transaction in one round trip (postgres_trips); the
        rows of the last. `durable` False: on a connection that commits without waiting
        for the server's flush. `before` is called once a connection is in hand."""
        import psycopg

        try:
            with (self._pool if durable else self._relaxed).connection() as conn:
                if before is not None:
                    before()
                if len(statements) > 1:
                    return trips.script(conn, statements)
                cursor = conn.execute(*statements[0])  # prepared once it is seen often
                return trips.rows_of(cursor)
        except psycopg.OperationalError as exc:
            self._recover()
            raise StoreUnavailable(f"PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None

    def _recover(self) -> None:
        """After a lost connection: drop the pool's dead idle connections (a restarted
        server leaves them all dead), so the next attempt gets a live one."""
        for pool in (self._pool, self._relaxed):
            try:
                pool.check()
            except Exception:  # noqa: BLE001 - the server may still be away
                pass

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        import psycopg

        try:
            with self._pool.connection() as conn:
                return conn.execute(sql, args).fetchall()
        except psycopg.OperationalError as exc:
            self._recover()
            raise StoreUnavailable(f"PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None

    # -- runs and events --------------------------------------------------------------

    def create_run(self, run_id: str, version_id: str, run_input: Any, options: dict[str, Any],
                   first_events: Sequence[NewEvent], durable: bool = True) -> list[Event]:
        import psycopg

        now = time.time()
        check_run_id(run_id)
        out, rows, head = chained(run_id, (0, GENESIS), first_events, now, None)
        try:
            self._one_trip([trips.create(run_id, version_id, now, dumps_text(run_input),
                                         dumps_text(options), rows, head)], durable)
        except psycopg.errors.UniqueViolation:
            raise RunExists(f"run {run_id} already exists") from None
        self._know_head(run_id, head)
        if self.on_commit is not None:
            self.on_commit(run_id, out)
        return out

    def append(self, run_id: str, events: Sequence[NewEvent], status: str | None = None,
               artifacts: Sequence[tuple[str, bytes]] = (), durable: bool = True,
               when_status: str | None = None) -> list[Event]:
        """Append under the run row's lock: processes executing branches of one run
        (lwtool worker) append in turn, each onto the chain's head. A StepCompleted for
        a step path the log has completed already is refused (StepCommittedElsewhere).
        `when_status`: only while the run's status is that one (RunStatusChanged). One
        round trip when this process made the run's last commit, two when another did
        (postgres_trips: a miss answers with the head); locking after OPTIMISTIC misses."""
        import psycopg

        worker = self._claims.get(run_id) if status in CLAIM_END else None
        claim = (worker, CLAIM_END[str(status)]) if worker else None
        try:
            with self._guard_of(run_id):  # this process's appends to a run take turns
                known = self._heads.get(run_id) or self._head(run_id, when_status)
                for _ in range(OPTIMISTIC):
                    now = time.time()
                    out, rows, head = chained(run_id, known, events, now, None)
                    done = self._one_trip([trips.append_at(
                        run_id, known, rows, head, status, now, when_status, artifacts,
                        claim)], durable, lambda: self._check_lock(run_id))
                    if done and done[0][0] is not None:
                        if claim is not None and done[0][1]:
                            self._claims[run_id] = ""  # ended
                        return self._appended(run_id, head, out)
                    self._heads.pop(run_id, None)  # another process appended meanwhile
                    artifacts = ()  # stored already
                    known = self._missed(run_id, known, done[0] if done else None,
                                         when_status)
            with self._tx(durable) as conn:  # contended: wait for the run row's lock
                self._check_lock(run_id)  # after any wait for a connection
                for ref, data in artifacts:
                    self._put(conn, ref, data)
                row = conn.execute("SELECT last_seq, last_hash, status FROM lwtool.runs "
                                   "WHERE run_id = %s FOR UPDATE", (run_id,)).fetchone()
                if row is None:
                    raise RunNotFound(f"no run {run_id}")
                if when_status is not None and row[2] != when_status:
                    raise RunStatusChanged(f"run {run_id} is {row[2]}, not {when_status}")
                out, head = self._insert(conn, run_id, (int(row[0]), str(row[1])), events,
                                         status, time.time())
                ended = claim is not None and bool(conn.execute(*finish_statement(
                    run_id, claim[0], claim[1])).fetchall())
            if ended:  # committed
                self._claims[run_id] = ""
            return self._appended(run_id, head, out)
        except psycopg.errors.UniqueViolation:
            paths = sorted({e.step_path or "" for e in events if e.type == "StepCompleted"})
            raise StepCommittedElsewhere(f"run {run_id}: {', '.join(paths)} completed "
                                         "already (committed by another worker)") from None

    def end_claim_with_run(self, run_id: str, worker: str) -> None:
        """Let the commit that ends the run (RunCompleted, RunFailed) end `worker`'s
        queue claim of it in its own transaction (`done`, `failed`): no round trip of
        its own, no moment where one is written and not the other."""
        self._claims[run_id] = worker

    def claim_ended(self, run_id: str, forget: bool = True) -> bool:
        """Whether the run's final commit ended its claim (end_claim_with_run);
        `forget`: the run is left (its registration dropped)."""
        ended = self._claims.get(run_id) == ""
        if forget:
            self._claims.pop(run_id, None)
        return ended

    def _missed(self, run_id: str, known: tuple[int, str], found: Any,
                when_status: str | None) -> tuple[int, str]:
        """The head to try after a miss: the one its statement found, else read anew."""
        if found is None or (int(found[2]), str(found[3])) == known:
            return self._head(run_id, when_status)
        if when_status is not None and found[4] != when_status:
            raise RunStatusChanged(f"run {run_id} is {found[4]}, not {when_status}")
        return int(found[2]), str(found[3])

    def _head(self, run_id: str, when_status: str | None) -> tuple[int, str]:
        """The run's head as committed (RunNotFound; RunStatusChanged when its status is
        not `when_status`)."""
        rows = self._read("SELECT last_seq, last_hash, status FROM lwtool.runs WHERE "
                          "run_id = %s", (run_id,))
        if not rows:
            raise RunNotFound(f"no run {run_id}")
        if when_status is not None and rows[0][2] != when_status:
            raise RunStatusChanged(f"run {run_id} is {rows[0][2]}, not {when_status}")
        return int(rows[0][0]), str(rows[0][1])

    def _guard_of(self, run_id: str) -> threading.Lock:
        with self._guard:
            if len(self._run_guards) >= KEPT and run_id not in self._run_guards:
                self._run_guards = {k: v for k, v in self._run_guards.items() if v.locked()}
            return self._run_guards.setdefault(run_id, threading.Lock())

    def _appended(self, run_id: str, head: tuple[int, str], out: list[Event]) -> list[Event]:
        self._know_head(run_id, head)
        if self.on_commit is not None:
            self.on_commit(run_id, out)
        return out

    def _know_head(self, run_id: str, head: tuple[int, str]) -> None:
        """Keep the head this process committed a run at: its next append is one round
        trip while no other process appends between (a bounded memory)."""
        if len(self._heads) >= KEPT and run_id not in self._heads:
            self._heads.clear()
        self._heads[run_id] = head

    @staticmethod
    def _insert(conn: Any, run_id: str, head: tuple[int, str], events: Sequence[NewEvent],
                status: str | None, now: float) -> tuple[list[Event], tuple[int, str]]:
        out, rows, (seq, prev) = chained(run_id, head, events, now, None)
        if rows:
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO lwtool.events VALUES (%s, %s, %s, %s, %s, %s, %s)",
                                rows)
        conn.execute("UPDATE lwtool.runs SET last_seq = %s, last_hash = %s, updated_at = %s, "
                     "status = coalesce(%s, status) WHERE run_id = %s",
                     (seq, prev, now, status, run_id))
        return out, (seq, prev)

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._read(f"SELECT {_RUN_COLUMNS} FROM lwtool.runs WHERE run_id = %s",
                          (run_id,))
        if not rows:
            raise RunNotFound(f"no run {run_id} in {self._where}")
        return run_record(rows[0])

    def list_runs(self) -> list[RunRecord]:
        return [run_record(r) for r in self._read(f"SELECT {_RUN_COLUMNS} FROM lwtool.runs "
                                               "ORDER BY created_at, run_id")]

    def events(self, run_id: str, types: Sequence[str] | None = None) -> list[Event]:
        """A run's events in commit order (only those of `types`); the whole log is
        verified against its hash chain first, as the local world does."""
        # one statement, so one snapshot: the head and the events it heads
        joined = self._read(
            "SELECT r.last_seq, r.last_hash, e.seq, e.type, e.step_path, e.payload, e.at, "
            "e.hash FROM lwtool.runs r LEFT JOIN lwtool.events e ON e.run_id = r.run_id "
            "WHERE r.run_id = %s ORDER BY e.seq", (run_id,))
        if not joined:
            return []
        head = joined[0][:2]
        rows = [row[2:] for row in joined if row[2] is not None]
        broken = chain_break(run_id, rows, int(head[0]), str(head[1]))
        if broken:
            raise StoreDamaged(f"run {run_id}: the event log is damaged: {broken}")
        return read_events(run_id, rows, set(types) if types else None)

    # -- artifacts --------------------------------------------------------------------

    @staticmethod
    def _put(conn: Any, ref: str, data: bytes) -> None:
        """Store `data` under `ref` (nothing when it is there already)."""
        added = conn.execute("INSERT INTO lwtool.artifacts VALUES (%s, %s) ON CONFLICT DO "
                             "NOTHING RETURNING ref", (ref, len(data))).fetchone()
        if added is None:
            return
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO lwtool.artifact_chunks VALUES (%s, %s, %s)",
                            [(ref, n, data[start:start + CHUNK]) for n, start in
                             enumerate(range(0, max(len(data), 1), CHUNK))])

    def sensitive_key(self) -> bytes:
        """The database's key for sensitive values (lwtool.world.keys)."""
        from lwtool.world.keys import postgres_key

        return postgres_key(self._pool)

    async def put_artifact(self, data: bytes, durable: bool = True) -> str:
        ref = f"artifact://sha256:{hashlib.sha256(data).hexdigest()}"
        with self._tx(durable) as conn:
            self._put(conn, ref, data)
        return ref

    async def get_artifact(self, ref: str) -> bytes:
        if not ARTIFACT_REF.fullmatch(ref):
            raise StoreDamaged(f"{ref!r} is not an artifact address of this store")
        rows = self._read("SELECT data FROM lwtool.artifact_chunks WHERE ref = %s ORDER BY n",
                          (ref,))
        if not rows:
            raise ArtifactMissing(f"artifact {ref} is missing from {self._where}")
        data = b"".join(bytes(r[0]) for r in rows)
        if hashlib.sha256(data).hexdigest() != ref.removeprefix("artifact://sha256:"):
            raise StoreDamaged(f"artifact {ref} in {self._where} is damaged (its content "
                               "does not match its hash)")
        return data

    def inline_artifact_refs(self) -> list[str]:
        return [r[0] for r in self._read("SELECT ref FROM lwtool.artifacts ORDER BY ref")]

    # -- locks ------------------------------------------------------------------------

    @contextmanager
    def lock_run(self, run_id: str) -> Iterator[None]:
        """Hold the run's advisory lock on a connection of its own while executing it;
        the server releases it when this process dies. Lock connections are kept for
        the next run (a new connection costs more than the run's first step)."""
        import psycopg

        check_run_id(run_id)
        key = run_lock_key(run_id)
        conn = self._lock_connection()
        held = False
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            held = bool(got and got[0])
            if not held:
                raise RunLocked(f"run {run_id} is being executed by another process")
            self._held[run_id] = conn
            yield
        except psycopg.OperationalError as exc:
            conn.close()
            raise StoreUnavailable(f"PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None
        finally:
            self._held.pop(run_id, None)
            self._release_lock(conn, key, held)

    def _check_lock(self, run_id: str) -> None:
        """Refuse a commit of a run whose lock this process held and lost."""
        conn = self._held.get(run_id)
        if conn is not None and _hung_up(conn):
            raise RunLockLost(f"run {run_id} lost its lock: PostgreSQL at {self._where} "
                              "closed the connection holding it; this process commits "
                              "nothing more of it")

    def _lock_connection(self, purpose: str = "run lock") -> Any:
        """A connection of its own to hold session advisory locks on (one kept from an
        earlier use for the same `purpose`, else a new one named after it)."""
        import psycopg

        with self._guard:
            idle = self._lock_idle.setdefault(purpose, [])
            while idle:
                conn = idle.pop()
                if not conn.closed:
                    return conn
        try:
            return psycopg.connect(self.url, autocommit=True, connect_timeout=10,
                                   application_name=f"lwtool {purpose} pid {os.getpid()}")
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot reach PostgreSQL at {self._where}: "
                                   f"{reason_of(exc, self._secrets)}") from None

    def _release_lock(self, conn: Any, key: int, held: bool,
                      purpose: str = "run lock") -> None:
        """Unlock and keep the connection; one that fails is closed (which unlocks)."""
        import psycopg

        if conn.closed:
            return
        try:
            if held:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.Error:
            conn.close()
            return
        with self._guard:
            self._lock_idle.setdefault(purpose, []).append(conn)

    def close(self) -> None:
        with self._guard:
            idle, self._lock_idle = self._lock_idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()
        self._pool.close()
        self._relaxed.close()


def postgres_world(url: str, data_dir: str | Path = DEFAULT_DATA_DIR,
                   max_concurrent_steps: int = DEFAULT_MAX_CONCURRENT_STEPS,
                   durability: str = DEFAULT_DURABILITY) -> PostgresWorld:
    """`lwtool.postgres_world("postgresql://host/db")`: runs in PostgreSQL; memory,
    scratch and skills stay in `data_dir` on each machine."""
    return PostgresWorld(url, data_dir, max_concurrent_steps, durability)


def _hung_up(conn: Any) -> bool:
    """Whether the server closed an idle lock connection. An idle session is sent
    nothing but its end, so a readable socket is looked at closer (one poll a commit)."""
    import psycopg

    if conn.closed:
        return True
    poller = select.poll()
    poller.register(conn.fileno(), select.POLLIN)
    if not poller.poll(0):
        return False
    try:
        conn.execute("SELECT 1")  # something else was sent (a notice): still alive?
    except psycopg.Error:
        return True
    return False

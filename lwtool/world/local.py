"""Local world: everything under one data dir (default `.little-workflow/`).

Layout (the spec's): `events/` (SQLite database in WAL mode: versions, runs, events,
small artifacts), `artifacts/` (content-addressed payload files), `locks/` (one lock
file per executing run), `outer-loops/`, `memory/`, `runs/` (run scratch),
`skills-cache/`.

Why SQLite in WAL mode: a commit is atomic and survives kill -9 of the writer at any
instant (the WAL is replayed on the next open), appends are ordered by one writer per
run (the run lock), and it ships with Python. Commits are `synchronous=FULL` (an fsync
each, ~0.4 ms here: durable against power loss as well as a killed process); events
that are only evidence (an attempt started) are committed without the fsync, which a
killed process cannot lose either. The events of one step boundary share one commit.
A run in `process` durability commits everything without the fsync (WAL with
synchronous=NORMAL: a killed process loses nothing, power loss may lose the last
commits, and the log is never corrupted either way).

The events of one commit share a row (local_events.packed; a single event has its
own), keyed by their run's number and first seq (see KEY_SPAN; older stores keep their
(run_id, seq) key). Artifacts up to 256 KiB live in the database, written in the same
transaction as (and before) the events that name them; larger ones are files written
to a temp name, fsynced and renamed before the referring event is appended.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lwtool.canonical.compact import dumps_text
from lwtool.world import rows as rows_shape
from lwtool.world.base import (
    DEFAULT_DURABILITY,
    Event,
    NewEvent,
    RunExists,
    RunNotFound,
    RunRecord,
    RunStatusChanged,
    StoreDamaged,
    StoreUnavailable,
    WorldError,
    check_durability,
    check_run_id,
)
from lwtool.world.chain import GENESIS, chain_break
from lwtool.world.local_artifacts import (
    ARTIFACT_REF,
    INLINE_ARTIFACT_LIMIT,
    PUT_INLINE,
    artifact_errors,
    file_digest,
    read_file,
    write_file,
)
from lwtool.world.local_events import (
    EVENT_COLUMNS,
    INSERT,
    INSERT_KEYED,
    INSERT_RUN,
    INSERT_RUN_KEYED,
    KEY_SPAN,
    MAX_SEQ,
    MISTYPED,
    holding,
    next_run_no,
    packed,
    read_events,
    run_record,
)
from lwtool.world.local_store import (
    WAL_CHECKPOINT_PAGES,
    add_hash_chain,
    add_version_meta,
    ensure_wal,
    event_columns,
    make_layout,
    on_read_only_fs,
    os_reason,
    store_error,
    unusable_because,
)
from lwtool.world.local_versions import LocalVersions
from lwtool.world.rows import checked
from lwtool.world.run_lock import hold_run_lock, holder_alive
from lwtool.world.views import InspectorViews

DEFAULT_DATA_DIR = ".little-workflow"
# Step attempts at once across a run. Above the schema's per-group maxConcurrency (10)
# with room for nested groups, so the default never undercuts what the LWIR asks for.
DEFAULT_MAX_CONCURRENT_STEPS = 32

class LocalWorld(LocalVersions, InspectorViews):
    """The local world. Synchronous SQLite calls are short (one small transaction each);
    artifact files go through aiofiles."""

    def __init__(self, data_dir: str | Path = DEFAULT_DATA_DIR,
                 max_concurrent_steps: int = DEFAULT_MAX_CONCURRENT_STEPS,
                 durability: str = DEFAULT_DURABILITY, read_only: bool = False) -> None:
        """`read_only`: open an existing store only to read it (the web inspector):
        nothing is created, migrated or written, and writing is refused."""
        if max_concurrent_steps < 1:
            raise ValueError("max_concurrent_steps must be at least 1")
        self.data_dir = Path(data_dir)
        self.max_concurrent_steps = max_concurrent_steps
        self.durability = check_durability(durability)
        self._db_path = self.data_dir / "events" / "events.db"
        if read_only and not self._db_path.is_file():
            raise StoreUnavailable(f"no lwtool data in {self.data_dir} (no {self._db_path})")
        try:
            if not read_only:
                make_layout(self.data_dir, self._db_path)
        except OSError as exc:
            reason = unusable_because(Path(exc.filename or self.data_dir)) or os_reason(exc)
            raise StoreUnavailable(f"cannot use the data dir {self.data_dir}: {reason}") from None
        self._lock = threading.Lock()
        self._heads: dict[str, tuple[int, str]] = {}  # run -> (last seq, hash) committed here
        self._bases: dict[str, int] = {}  # run -> its first event key - 1 (keyed stores)
        # On a read-only file system nothing can write: the store is opened read-only
        # and writing is refused with the reason. Commits the last writer left in the
        # -wal file are read through it (SQLite reads a WAL store read-only when its
        # -wal and -shm files exist); without one, the store is read as immutable (SQLite
        # could not open a WAL database there otherwise). A reader on a writable file
        # system sees every commit as it lands.
        frozen_fs = self._frozen_fs = on_read_only_fs(self.data_dir)
        self.read_only = read_only or frozen_fs
        self._current_sync = "FULL"
        try:
            if self.read_only:
                wal = self._db_path.with_name("events.db-wal")
                frozen = "" if not frozen_fs or wal.exists() and wal.stat().st_size \
                    else "&immutable=1"
                self._db = sqlite3.connect(f"file:{quote(str(self._db_path))}?mode=ro"
                                           f"{frozen}", uri=True, isolation_level=None,
                                           check_same_thread=False)
            else:
                self._db = sqlite3.connect(self._db_path, isolation_level=None,
                                           check_same_thread=False)
                # The busy timeout first: any later statement may meet another's lock.
                self._db.execute("PRAGMA busy_timeout=10000")
                ensure_wal(self._db)
                self._sync("FULL")
            tables = {r[0] for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"versions", "runs", "events", "artifacts"} <= tables:
                raise StoreDamaged(f"the event store {self._db_path} is damaged: it lacks "
                                   "lwtool's tables")
            columns = event_columns(self._db)
            if not self.read_only and "hash" not in columns:
                add_hash_chain(self._db)
            self._keyed = "id" in columns
            self._has_meta = "version_meta" in tables
            if not self._has_meta and not self.read_only:
                add_version_meta(self._db)
                self._has_meta = True
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise self._store_error(exc) from None

    def _sync(self, level: str) -> None:
        """Commit at this synchronous level (FULL: fsynced) from now on, with the WAL
        checkpoint size that suits it (local_store.WAL_CHECKPOINT_PAGES)."""
        self._db.execute(f"PRAGMA synchronous={level}")
        self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES[level]}")
        self._current_sync = level

    def _store_error(self, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> WorldError:
        return store_error(self._db_path, exc)

    def _read_only_error(self) -> StoreUnavailable:
        why = "is on a read-only file system" if self._frozen_fs else "was opened read-only"
        return StoreUnavailable(f"cannot write to the data dir {self.data_dir}: "
                                f"{self.data_dir} {why}")

    def _tx(self, durable: bool = True) -> _Transaction:
        """One write transaction under the world's lock: committed when its block ends,
        rolled back when it raises; a store error becomes a WorldError."""
        if self.read_only:
            raise self._read_only_error()
        return _Transaction(self, durable)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._db.execute(sql, args).fetchall()
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise self._store_error(exc) from None

    def _snapshot(self, *queries: tuple[str, Sequence[Any]]) -> list[list[Any]]:
        """Several reads from one consistent state (a live run may be appending)."""
        with self._lock:
            try:
                self._db.execute("BEGIN")
                try:
                    return [self._db.execute(sql, args).fetchall() for sql, args in queries]
                finally:
                    self._db.execute("COMMIT")
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise self._store_error(exc) from None

    # -- runs and events ----------------------------------------------------------------------

    def create_run(self, run_id: str, version_id: str, run_input: Any, options: dict[str, Any],
                   first_events: Sequence[NewEvent], durable: bool = True) -> list[Event]:
        now = time.time()
        check_run_id(run_id)
        with self._tx(durable) as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise RunExists(f"run {run_id} already exists")
            row = (run_id, version_id, now, now, dumps_text(run_input), dumps_text(options))
            if self._keyed:
                run_no = next_run_no(db)
                db.execute(INSERT_RUN_KEYED, (*row, run_no))
                self._bases[run_id] = run_no * KEY_SPAN
            else:
                db.execute(INSERT_RUN, row)
            self._heads[run_id] = (0, GENESIS)
            committed, head = self._insert(db, run_id, first_events, None, now)
        self._heads[run_id] = head
        return committed

    def append(self, run_id: str, events: Sequence[NewEvent], status: str | None = None,
               artifacts: Sequence[tuple[str, bytes]] = (), durable: bool = True,
               when_status: str | None = None) -> list[Event]:
        """Commit small `artifacts`, then `events` (and a new run status), in one
        transaction. `durable=False` skips the fsync of this commit (it still survives a
        killed process; the next durable commit makes it power-safe too, the WAL being
        sequential): for evidence such as attempt-started events, and for every commit
        of a run in process durability. `when_status`: commit only while the run's
        status is that one (RunStatusChanged otherwise, nothing written)."""
        with self._tx(durable) as db:
            if when_status is not None:
                row = db.execute("SELECT status FROM runs WHERE run_id = ?",
                                 (run_id,)).fetchone()
                if row is None:
                    raise RunNotFound(f"no run {run_id}")
                if row[0] != when_status:
                    raise RunStatusChanged(f"run {run_id} is {row[0]}, not {when_status}")
            for artifact in artifacts:  # mostly one: execute is cheaper than executemany
                db.execute(PUT_INLINE, artifact)
            committed, head = self._insert(db, run_id, events, status, time.time())
        self._heads[run_id] = head
        return committed

    def _insert(self, db: sqlite3.Connection, run_id: str, events: Sequence[NewEvent],
                status: str | None, now: float) -> tuple[list[Event], tuple[int, str]]:
        """Chain and insert `events` (one packed row; local_events.packed); move the run's
        head (and status). The head this world committed last is taken on trust, but
        only moved if the stored one still matches it (one UPDATE; else it is read and
        the events chained again)."""
        head = self._heads.get(run_id)
        insert = INSERT_KEYED if self._keyed else INSERT
        if head is not None:
            out, rows, new_head = packed(run_id, head, events, now, self._bases.get(run_id))
            if self._move_head(db, run_id, head, new_head, status, now):
                db.executemany(insert, rows)
                return out, new_head
        row = db.execute(f"SELECT last_seq, last_hash{', run_no' if self._keyed else ''} "
                         "FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(f"no run {run_id}")
        head = tuple(checked([row[:2]], rows_shape.HEAD, f"run {run_id}: its head")[0])
        if self._keyed:
            if type(row[2]) is not int or not 0 < row[2] < KEY_SPAN:
                raise StoreDamaged(f"run {run_id}: its run number is damaged ({row[2]!r})")
            self._bases[run_id] = row[2] * KEY_SPAN
        out, rows, new_head = packed(run_id, head, events, now, self._bases.get(run_id))
        self._move_head(db, run_id, head, new_head, status, now)
        db.executemany(insert, rows)
        return out, new_head

    @staticmethod
    def _move_head(db: sqlite3.Connection, run_id: str, head: tuple[int, str],
                   new_head: tuple[int, str], status: str | None, now: float) -> bool:
        """Set the run's head to `new_head` if it is `head`; False when it is not."""
        if status is None:
            moved = db.execute("UPDATE runs SET last_seq = ?, last_hash = ?, updated_at = ? "
                               "WHERE run_id = ? AND last_seq = ? AND last_hash = ?",
                               (*new_head, now, run_id, *head))
        else:
            moved = db.execute("UPDATE runs SET last_seq = ?, last_hash = ?, updated_at = ?, "
                               "status = ? WHERE run_id = ? AND last_seq = ? AND "
                               "last_hash = ?", (*new_head, now, status, run_id, *head))
        return moved.rowcount == 1

    def get_run(self, run_id: str) -> RunRecord:
        rows = self._read("SELECT run_id, version_id, status, created_at, updated_at, input, "
                          "options FROM runs WHERE run_id = ?", (run_id,))
        if not rows:
            raise RunNotFound(f"no run {run_id} in {self.data_dir}")
        return run_record(checked(rows, rows_shape.RUN, f"run {run_id}")[0])

    def list_runs(self) -> list[RunRecord]:
        rows = self._read("SELECT run_id, version_id, status, created_at, updated_at, input, "
                          "options FROM runs ORDER BY created_at, run_id")
        return [run_record(checked([r], rows_shape.RUN, f"the run row of {r[0]!r}")[0])
                for r in rows]

    def inline_artifact_refs(self) -> list[str]:
        rows = self._read("SELECT ref FROM artifacts ORDER BY ref")
        return [r[0] for r in checked(rows, rows_shape.ONE_TEXT, f"the artifacts table of "
                                      f"{self._db_path}")]

    def events(self, run_id: str, types: Sequence[str] | None = None) -> list[Event]:
        """A run's events in commit order (only those of `types`, when given). The whole
        log is verified against its hash chain first: replay never trusts an edited one."""
        if types:
            condition, args = holding(types)
            rows = self._read(f"SELECT {EVENT_COLUMNS} {self._events_of_run()[0]} = ? "
                              f"AND {condition} ORDER BY e.seq", (run_id, *args))
            checked(rows, rows_shape.CHAINED_EVENT, f"run {run_id}: an event")
        else:
            rows = self._chained_rows(run_id)
        return read_events(run_id, rows, types or None)

    def _events_of_run(self) -> tuple[str, str]:
        """(`FROM ... WHERE <run id column>`, that column): the events `e` of the runs
        a condition on the run id picks (append `= ?` or `IN (...)`), in this store's
        layout. Keyed stores scan each run's key range, older ones their (run_id, seq)
        key."""
        if self._keyed:
            return (f"FROM runs r JOIN events e ON e.id BETWEEN r.run_no * {KEY_SPAN} + 1 "
                    f"AND r.run_no * {KEY_SPAN} + {MAX_SEQ} WHERE r.run_id", "r.run_id")
        return "FROM events e WHERE e.run_id", "e.run_id"

    def _chained_rows(self, run_id: str) -> list[Any]:
        source = self._events_of_run()[0]
        rows, head, mistyped = self._snapshot(
            (f"SELECT {EVENT_COLUMNS} {source} = ? ORDER BY e.seq", (run_id,)),
            ("SELECT last_seq, last_hash FROM runs WHERE run_id = ?", (run_id,)),
            (f"SELECT count(*) {source} = ? AND {MISTYPED}", (run_id,)))
        if mistyped[0][0]:  # SQLite counted them; the row check says which and how
            checked(rows, rows_shape.CHAINED_EVENT, f"run {run_id}: an event")
        checked(head, rows_shape.HEAD, f"run {run_id}: its head")
        broken = chain_break(run_id, rows, head[0][0], head[0][1]) if head else None
        if broken:
            raise StoreDamaged(f"run {run_id}: the event log is damaged: {broken}")
        return rows

    # -- artifacts ------------------------------------------------------------------------------

    def sensitive_key(self) -> bytes:
        """The data dir's key for sensitive values (lwtool.world.keys)."""
        from lwtool.world.keys import local_key

        return local_key(self.data_dir)

    def _artifact_file(self, digest: str) -> Path:
        return self.data_dir / "artifacts" / "sha256" / digest[:2] / digest

    async def put_artifact(self, data: bytes, durable: bool = True) -> str:
        """Store `data`; return its content address `artifact://sha256:<hex>`. Durable:
        on the disk before this returns; otherwise it survives a killed process (the
        file is complete under its name) but may not survive power loss."""
        digest = hashlib.sha256(data).hexdigest()
        ref = f"artifact://sha256:{digest}"
        if len(data) <= INLINE_ARTIFACT_LIMIT:
            with self._tx(durable) as db:
                db.execute(PUT_INLINE, (ref, data))
            return ref
        target = self._artifact_file(digest)
        if target.exists() and file_digest(target) == digest:
            return ref  # present and intact (a damaged copy is rewritten below)
        try:
            await write_file(target, data, digest, durable)
        except OSError as exc:
            raise StoreUnavailable(f"cannot store an artifact of {len(data):,} bytes in "
                                   f"{self.data_dir}: {os_reason(exc)}") from None
        return ref

    async def get_artifact(self, ref: str) -> bytes:
        """The bytes stored under `ref`, verified against it. A ref that is not a content
        address (`artifact://sha256:<64 hex>`) or names anything but a regular file in
        this store is damage: it is never followed out of the store."""
        if not ARTIFACT_REF.fullmatch(ref):
            raise StoreDamaged(f"{ref!r} is not an artifact address of this store")
        digest = ref.removeprefix("artifact://sha256:")
        rows = self._read("SELECT data FROM artifacts WHERE ref = ?", (ref,))
        if rows:
            data: bytes = checked(rows, rows_shape.ONE_BLOB, f"artifact {ref}")[0][0]
            if hashlib.sha256(data).hexdigest() != digest:
                raise StoreDamaged(f"artifact {ref} in {self._db_path} is damaged (its "
                                   "content does not match its hash)")
            return data
        path = self._artifact_file(digest)
        with self._artifact_errors(ref, path):
            data = await read_file(path)
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreDamaged(f"artifact {ref} in {path} is damaged (its content does "
                               "not match its hash)")
        return data

    def _artifact_errors(self, ref: str, path: Path) -> AbstractContextManager[None]:
        return artifact_errors(self.data_dir, ref, path)

    # -- locks ----------------------------------------------------------------------------------

    @contextmanager
    def lock_run(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock while executing it. The OS drops it when the process dies,
        so a killed run can be replayed at once; a live holder makes this raise."""
        if self.read_only:
            raise self._read_only_error()
        with hold_run_lock(self.data_dir / "locks", run_id):
            yield

    def executing(self, run_id: str) -> bool:
        """Whether a live process executes the run now (a `running` run nobody executes
        was interrupted: `lwtool replay` resumes it)."""
        return holder_alive(self.data_dir / "locks", run_id)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def local_world(data_dir: str | Path = DEFAULT_DATA_DIR,
                max_concurrent_steps: int = DEFAULT_MAX_CONCURRENT_STEPS,
                durability: str = DEFAULT_DURABILITY) -> LocalWorld:
    """The spec's `localWorld({dataDir, maxConcurrentSteps})`; `durability` is the
    default of runs started in it (strict | process; a run may choose its own)."""
    return LocalWorld(data_dir, max_concurrent_steps, durability)


class _Transaction:
    """LocalWorld._tx: a class, not a generator (a step's commit enters one)."""

    __slots__ = ("world", "durable")

    def __init__(self, world: LocalWorld, durable: bool) -> None:
        self.world, self.durable = world, durable

    def __enter__(self) -> sqlite3.Connection:
        world = self.world
        world._lock.acquire()
        try:
            level = "FULL" if self.durable else "NORMAL"
            if level != world._current_sync:
                world._sync(level)
            world._db.execute("BEGIN IMMEDIATE")
        except BaseException as exc:
            world._lock.release()
            if isinstance(exc, (sqlite3.DatabaseError, UnicodeDecodeError)):
                raise world._store_error(exc) from None
            raise
        return world._db

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: Any) -> None:
        world = self.world
        try:
            world._db.execute("COMMIT" if kind is None else "ROLLBACK")
        except (sqlite3.DatabaseError, UnicodeDecodeError) as failed:
            raise world._store_error(failed) from None
        finally:
            world._lock.release()
        if isinstance(exc, (sqlite3.DatabaseError, UnicodeDecodeError)):
            raise world._store_error(exc) from None

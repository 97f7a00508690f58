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

Events are keyed by their run's number and seq (see KEY_SPAN; older stores keep their
(run_id, seq) key). Artifacts up to 256 KiB live in the database, written in the same
transaction as (and before) the events that name them; larger ones are files written
to a temp name, fsynced and renamed before the referring event is appended.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lwtool.canonical.compact import dumps_text, loads, loads_marked
from lwtool.world import rows as rows_shape
from lwtool.world.base import (
    DEFAULT_DURABILITY,
    ArtifactMissing,
    Event,
    NewEvent,
    RunLocked,
    RunNotFound,
    RunRecord,
    StoreDamaged,
    StoreUnavailable,
    WorldError,
    check_durability,
    check_run_id,
)
from lwtool.world.chain import FORM, GENESIS, chain_break, event_hash
from lwtool.world.files import NotARegularFile, open_regular
from lwtool.world.rows import checked
from lwtool.world.views import InspectorViews

INLINE_ARTIFACT_LIMIT = 256 * 1024
# Stores made from format 3 on key each event by its run's number and its seq (run_no *
# 2**32 + seq, the table's rowid): a run's events are one key range, appended in
# order, so a step's commit writes ~5.5 pages instead of the ~8.4 a (run_id, seq)
# WITHOUT ROWID key did (that index B-tree rebalanced on nearly every append). Older stores keep
# their layout and are read and written as they are.
KEY_SPAN = 2 ** 32
MAX_SEQ = KEY_SPAN - 1
WAL_CHECKPOINT_PAGES = 4000
LAYOUT = ("events", "artifacts", "locks", "outer-loops", "memory", "runs", "skills-cache")
DEFAULT_DATA_DIR = ".little-workflow"
# Step attempts at once across a run. Above the schema's per-group maxConcurrency (10)
# with room for nested groups, so the default never undercuts what the LWIR asks for.
DEFAULT_MAX_CONCURRENT_STEPS = 32

_SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
  version_id TEXT PRIMARY KEY,
  lwir TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  version_id TEXT NOT NULL REFERENCES versions(version_id),
  status TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL,
  input TEXT NOT NULL,
  options TEXT NOT NULL,
  last_seq INTEGER NOT NULL DEFAULT 0,
  last_hash TEXT NOT NULL DEFAULT '',
  run_no INTEGER
);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  step_path TEXT,
  payload TEXT NOT NULL,
  at REAL NOT NULL,
  hash TEXT
);
CREATE TABLE IF NOT EXISTS artifacts (
  ref TEXT PRIMARY KEY,
  data BLOB NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS runs_by_number ON runs (run_no);
"""


def _chained(run_id: str, head: tuple[int, str], events: Sequence[NewEvent], now: float,
             base: int | None) -> tuple[list[Event], list[tuple[Any, ...]], tuple[int, str]]:
    """The events as committed, their rows (payloads serialized once, each hash chained
    on the one before; keyed `base + seq` in a keyed store) and the run's head after."""
    seq, prev = head
    out, rows = [], []
    if seq + len(events) > MAX_SEQ:
        raise WorldError(f"run {run_id} would exceed {MAX_SEQ:,} events")
    for event in events:
        seq += 1
        text = dumps_text(event.payload)
        prev = event_hash(prev, run_id, seq, event.type, event.step_path, now, text)
        out.append(Event(seq, run_id, event.type, event.payload, event.step_path, now))
        row = (run_id, seq, event.type, event.step_path, text, now, prev)
        rows.append(row if base is None else (base + seq, *row))
    return out, rows, (seq, prev)


class LocalWorld(InspectorViews):
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
                self._make_layout()
        except OSError as exc:
            reason = _unusable_because(Path(exc.filename or self.data_dir)) or _os_reason(exc)
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
        frozen_fs = self._frozen_fs = _on_read_only_fs(self.data_dir)
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
                _ensure_wal(self._db)
                self._db.execute("PRAGMA synchronous=FULL")
                # A checkpoint every 4,000 WAL pages (16 MiB) instead of SQLite's 1,000:
                # pages a run rewrites (its head, index pages) are copied once per
                # checkpoint, so fewer copies and fsyncs per commit (measured 10-15%).
                self._db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
            tables = {r[0] for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            if not {"versions", "runs", "events", "artifacts"} <= tables:
                raise StoreDamaged(f"the event store {self._db_path} is damaged: it lacks "
                                   "lwtool's tables")
            columns = _event_columns(self._db)
            if not self.read_only and "hash" not in columns:
                _add_hash_chain(self._db)
            self._keyed = "id" in columns
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            raise self._store_error(exc) from None

    def _make_layout(self) -> None:
        """The folders, then the database: built under a temp name and renamed into place,
        so an events.db that exists is always one this world finished creating (a
        zero-length or missing-table one is damage, never re-created silently)."""
        # Private: inputs, outputs and prompts may hold secrets (0700 folders, 0600 files).
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        for name in LAYOUT:
            (self.data_dir / name).mkdir(mode=0o700, exist_ok=True)
        if self._db_path.exists() or self._db_path.is_symlink():
            if self._db_path.is_file() and self._db_path.stat().st_size == 0:
                raise StoreDamaged(f"the event store {self._db_path} is empty (truncated); "
                                   "move it away to start a new data dir")
            return
        temp = self._db_path.with_name(f".events.db.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        os.close(_private_new_file(str(temp), os.O_WRONLY))
        try:
            db = sqlite3.connect(temp, isolation_level=None)
            try:
                db.executescript(_SCHEMA)
                db.execute("PRAGMA user_version = 3")
                # WAL is written into the file's header: openers never switch the
                # journal mode (which takes an exclusive lock other first opens hold
                # off). Closing the only connection removes the temp's -wal/-shm.
                db.execute("PRAGMA journal_mode=WAL")
            finally:
                db.close()
            with open(temp, "rb+") as fh:
                os.fsync(fh.fileno())
            try:  # link, not rename: never replaces a store another process just made
                os.link(temp, self._db_path)
            except FileExistsError:
                return
            _fsync_dir(self._db_path.parent)
        finally:
            for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
                leftover.unlink(missing_ok=True)

    def _store_error(self, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> WorldError:
        """Damage (not a database, corrupt pages, text that is not UTF-8) apart from a
        store that is fine but cannot be used now (read-only, full, not ours, busy).
        SQLite hands back text as it was written: bytes edited into it that are not
        UTF-8 fail to decode, a UnicodeDecodeError rather than a DatabaseError."""
        where = f"the event store {self._db_path}"
        if isinstance(exc, UnicodeDecodeError):
            return StoreDamaged(f"{where} is damaged: it holds text that is not UTF-8 "
                                "(edited bytes)")
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
        if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return StoreDamaged(f"{where} is damaged: {exc}")
        reason = _unusable_because(self._db_path) or _SQLITE_REASONS.get(code)
        return StoreUnavailable(f"{where} cannot be used: {reason or exc}")

    def _read_only_error(self) -> StoreUnavailable:
        why = "is on a read-only file system" if self._frozen_fs else "was opened read-only"
        return StoreUnavailable(f"cannot write to the data dir {self.data_dir}: "
                                f"{self.data_dir} {why}")

    @contextmanager
    def _tx(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise self._read_only_error()
        with self._lock:
            try:
                level = "FULL" if durable else "NORMAL"
                if level != self._current_sync:
                    self._db.execute(f"PRAGMA synchronous={level}")
                    self._current_sync = level
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                raise self._store_error(exc) from None

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

    # -- versions ---------------------------------------------------------------------------

    def register_version(self, version_id: str, lwir: dict[str, Any],
                         durable: bool = True, canonical: str | None = None) -> None:
        """Store a version under the id its caller computed (not hashed again here: that
        doubled a run's start-up cost); `get_version` verifies it on every read. Stored
        in its RFC 8785 form (`canonical`, when the caller has it from computing the
        id), so that check is one SHA-256 of the text. A version already stored costs
        one read, no commit."""
        from lwtool.canonical.jcs import canonical_text

        if self._read("SELECT 1 FROM versions WHERE version_id = ?", (version_id,)):
            return
        text = canonical if canonical is not None else canonical_text(lwir)
        with self._tx(durable) as db:
            db.execute("INSERT OR IGNORE INTO versions VALUES (?, ?)", (version_id, text))

    def get_version(self, version_id: str) -> dict[str, Any] | None:
        """The stored LWIR, verified against its id (a WorkflowVersion is immutable): the
        hash of the stored text (its canonical form), else (a store that kept another
        form) of the value read back, canonicalized."""
        from lwtool.canonical.digest import sha256_of_bytes, workflow_version_id

        rows = self._read("SELECT lwir FROM versions WHERE version_id = ?", (version_id,))
        if not rows:
            return None
        try:
            checked(rows, rows_shape.ONE_TEXT, f"WorkflowVersion {version_id}")
            text: str = rows[0][0]
            lwir: dict[str, Any] = loads(text)
            intact = (sha256_of_bytes(text.encode("utf-8")) == version_id
                      or workflow_version_id(lwir) == version_id)
        except (ValueError, TypeError, StoreDamaged):
            intact = False
        if not intact:
            raise StoreDamaged(f"WorkflowVersion {version_id} in {self._db_path} is damaged "
                               "(its LWIR no longer hashes to its id)")
        return lwir

    # -- runs and events ----------------------------------------------------------------------

    def create_run(self, run_id: str, version_id: str, run_input: Any, options: dict[str, Any],
                   first_events: Sequence[NewEvent], durable: bool = True) -> list[Event]:
        now = time.time()
        check_run_id(run_id)
        with self._tx(durable) as db:
            if db.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
                raise WorldError(f"run {run_id} already exists")
            row = (run_id, version_id, now, now, dumps_text(run_input), dumps_text(options))
            if self._keyed:
                run_no = _next_run_no(db)
                db.execute(_INSERT_RUN_KEYED, (*row, run_no))
                self._bases[run_id] = run_no * KEY_SPAN
            else:
                db.execute(_INSERT_RUN, row)
            self._heads[run_id] = (0, GENESIS)
            committed, head = self._insert(db, run_id, first_events, None, now)
        self._heads[run_id] = head
        return committed

    def append(self, run_id: str, events: Sequence[NewEvent], status: str | None = None,
               artifacts: Sequence[tuple[str, bytes]] = (), durable: bool = True) -> list[Event]:
        """Commit small `artifacts`, then `events` (and a new run status), in one
        transaction. `durable=False` skips the fsync of this commit (it still survives a
        killed process; the next durable commit makes it power-safe too, the WAL being
        sequential): for evidence such as attempt-started events, and for every commit
        of a run in process durability."""
        with self._tx(durable) as db:
            if artifacts:
                db.executemany(_PUT_INLINE, artifacts)
            committed, head = self._insert(db, run_id, events, status, time.time())
        self._heads[run_id] = head
        return committed

    def _insert(self, db: sqlite3.Connection, run_id: str, events: Sequence[NewEvent],
                status: str | None, now: float) -> tuple[list[Event], tuple[int, str]]:
        """Chain and insert `events`; move the run's head (and status). The head this
        world committed last is taken on trust, but only moved if the stored one still
        matches it (one UPDATE; else it is read and the events chained again)."""
        head = self._heads.get(run_id)
        insert = _INSERT_KEYED if self._keyed else _INSERT
        if head is not None:
            out, rows, new_head = _chained(run_id, head, events, now, self._bases.get(run_id))
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
        out, rows, new_head = _chained(run_id, head, events, now, self._bases.get(run_id))
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
        return self._record(checked(rows, rows_shape.RUN, f"run {run_id}")[0])

    def list_runs(self) -> list[RunRecord]:
        rows = self._read("SELECT run_id, version_id, status, created_at, updated_at, input, "
                          "options FROM runs ORDER BY created_at, run_id")
        return [self._record(checked([r], rows_shape.RUN, f"the run row of {r[0]!r}")[0])
                for r in rows]

    @staticmethod
    def _record(row: Any) -> RunRecord:
        try:
            return RunRecord(row[0], row[1], row[2], row[3], row[4], loads(row[5]),
                             _payload(row[6], None))
        except (ValueError, TypeError) as exc:
            raise StoreDamaged(f"run {row[0]}: its stored input or options are damaged "
                               f"({exc})") from None

    def version_ids(self) -> list[str]:
        rows = self._read("SELECT version_id FROM versions ORDER BY version_id")
        return [r[0] for r in checked(rows, rows_shape.ONE_TEXT, f"the versions table of "
                                      f"{self._db_path}")]

    def inline_artifact_refs(self) -> list[str]:
        rows = self._read("SELECT ref FROM artifacts ORDER BY ref")
        return [r[0] for r in checked(rows, rows_shape.ONE_TEXT, f"the artifacts table of "
                                      f"{self._db_path}")]

    def events(self, run_id: str, types: Sequence[str] | None = None) -> list[Event]:
        """A run's events in commit order (only those of `types`, when given). The whole
        log is verified against its hash chain first: replay never trusts an edited one."""
        if types:
            marks = ",".join("?" * len(types))
            rows = self._read(f"SELECT {_EVENT_COLUMNS} {self._events_of_run()[0]} = ? "
                              f"AND e.type IN ({marks}) ORDER BY e.seq", (run_id, *types))
            checked(rows, rows_shape.CHAINED_EVENT, f"run {run_id}: an event")
        else:
            rows = self._chained_rows(run_id)
        try:
            return [Event(r[0], run_id, r[1], _payload(r[3], r[5]), r[2], r[4]) for r in rows]
        except ValueError as exc:
            raise StoreDamaged(f"run {run_id}: an event payload is damaged ({exc})") from None

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
            (f"SELECT {_EVENT_COLUMNS} {source} = ? ORDER BY e.seq", (run_id,)),
            ("SELECT last_seq, last_hash FROM runs WHERE run_id = ?", (run_id,)),
            (f"SELECT count(*) {source} = ? AND {_MISTYPED}", (run_id,)))
        if mistyped[0][0]:  # SQLite counted them; the row check says which and how
            checked(rows, rows_shape.CHAINED_EVENT, f"run {run_id}: an event")
        checked(head, rows_shape.HEAD, f"run {run_id}: its head")
        broken = chain_break(run_id, rows, head[0][0], head[0][1]) if head else None
        if broken:
            raise StoreDamaged(f"run {run_id}: the event log is damaged: {broken}")
        return rows

    # -- artifacts ------------------------------------------------------------------------------

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
                db.execute(_PUT_INLINE, (ref, data))
            return ref
        target = self._artifact_file(digest)
        if target.exists() and _file_digest(target) == digest:
            return ref  # present and intact (a damaged copy is rewritten below)
        try:
            await _write_file(target, data, digest, durable)
        except OSError as exc:
            raise StoreUnavailable(f"cannot store an artifact of {len(data):,} bytes in "
                                   f"{self.data_dir}: {_os_reason(exc)}") from None
        return ref

    async def get_artifact(self, ref: str) -> bytes:
        """The bytes stored under `ref`, verified against it. A ref that is not a content
        address (`artifact://sha256:<64 hex>`) or names anything but a regular file in
        this store is damage: it is never followed out of the store."""
        if not _ARTIFACT_REF.fullmatch(ref):
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
            data = await _read_file(path)
        if hashlib.sha256(data).hexdigest() != digest:
            raise StoreDamaged(f"artifact {ref} in {path} is damaged (its content does "
                               "not match its hash)")
        return data

    @contextmanager
    def _artifact_errors(self, ref: str, path: Path) -> Iterator[None]:
        """Reading the file of artifact `ref`: what goes wrong as the world's errors."""
        try:
            yield
        except FileNotFoundError:
            raise ArtifactMissing(f"artifact {ref} is missing from {self.data_dir}") from None
        except NotARegularFile:
            raise StoreDamaged(f"artifact {ref} is damaged: {path} is not a regular file "
                               "(a link, device or folder)") from None
        except OSError as exc:
            raise StoreUnavailable(f"artifact {ref} cannot be read: {_os_reason(exc)}") from None

    # -- locks ----------------------------------------------------------------------------------

    @contextmanager
    def lock_run(self, run_id: str) -> Iterator[None]:
        """Hold the run's lock while executing it. The OS drops it when the process dies,
        so a killed run can be replayed at once; a live holder makes this raise."""
        path = self.data_dir / "locks" / f"{check_run_id(run_id)}.lock"
        if self.read_only:
            raise self._read_only_error()
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # a symlink (ELOOP), a folder, no permission
            raise WorldError(f"cannot open the lock file {path} of run {run_id}: "
                             f"{exc.strerror}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                raise RunLocked(f"run {run_id} is being executed by another process "
                                f"(pid {holder})") from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            yield
        finally:
            os.close(fd)

    def close(self) -> None:
        with self._lock:
            self._db.close()


_SQLITE_REASONS = {
    sqlite3.SQLITE_READONLY: "it is read-only (a read-only mount, or another user's file)",
    sqlite3.SQLITE_CANTOPEN: "it cannot be opened (permission denied, or another user's "
                             "folder)",
    sqlite3.SQLITE_PERM: "permission denied",
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_IOERR: "a disk I/O error (the device failed or is full)",
    sqlite3.SQLITE_BUSY: "another process holds it locked",
}


def _on_read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _unusable_because(path: Path) -> str | None:
    """Why a store that is not damaged cannot be used, read off the file system: a
    read-only mount, another user's folder, a full disk; None when none of these."""
    for probe in (path, *path.parents):  # the nearest part of the path we can stat
        try:
            info = os.stat(probe)
        except OSError:
            continue
        if info.st_uid != os.geteuid() and not os.access(probe, os.R_OK | os.W_OK | (
                os.X_OK if stat.S_ISDIR(info.st_mode) else 0)):
            return (f"{probe} belongs to another user (uid {info.st_uid}) and you may not "
                    "read and write it")
        try:
            fs = os.statvfs(probe)
        except OSError:
            return None
        if fs.f_flag & os.ST_RDONLY:
            return f"{probe} is on a read-only file system"
        if fs.f_bavail == 0:
            return f"the disk holding {probe} is full"
        return None
    return None


def _os_reason(exc: OSError) -> str:
    """An OSError as the cause a user can act on."""
    reasons = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.EROFS: "it is on a read-only file system",
               errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
               errno.ELOOP: "it is a symbolic link", errno.EISDIR: "it is a folder",
               errno.ENOTDIR: "a part of its path is not a folder"}
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return f"{reason} ({exc.filename})" if exc.filename else reason


def _ensure_wal(db: sqlite3.Connection, wait: float = 10.0) -> None:
    """WAL mode. New stores are made in it; one made before that (rollback journal) is
    switched by its first opener, which needs every other connection out of a
    transaction, and SQLite refuses at once rather than wait: retried until `wait`."""
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or \
                    time.monotonic() > deadline:
                raise
        time.sleep(0.005)


def _event_columns(db: sqlite3.Connection) -> set[str]:
    return {r[1] for r in db.execute("PRAGMA table_info(events)")}


def _add_hash_chain(db: sqlite3.Connection) -> None:
    """Bring a store written before event hash chains up to date: add the columns and
    chain the events already there (once; later opens find the columns)."""
    db.execute("BEGIN IMMEDIATE")
    if "hash" in _event_columns(db):
        db.execute("ROLLBACK")  # another process migrated it meanwhile
        return
    try:
        db.execute("ALTER TABLE events ADD COLUMN hash TEXT")
        db.execute("ALTER TABLE runs ADD COLUMN last_hash TEXT NOT NULL DEFAULT ''")
        for (run_id,) in db.execute("SELECT run_id FROM runs").fetchall():
            chain_run(db, run_id)
        db.execute("PRAGMA user_version = 2")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def chain_run(db: sqlite3.Connection, run_id: str) -> None:
    """(Re)compute a run's chain over the events as stored and make it the run's head."""
    prev = GENESIS
    rows = db.execute("SELECT seq, type, step_path, payload, at FROM events "
                      "WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
    for seq, type_, step_path, payload, at in rows:
        prev = event_hash(prev, run_id, seq, type_, step_path, at, payload)
        db.execute("UPDATE events SET hash = ? WHERE run_id = ? AND seq = ?",
                   (prev, run_id, seq))
    last = rows[-1][0] if rows else 0
    db.execute("UPDATE runs SET last_seq = ?, last_hash = ? WHERE run_id = ?",
               (last, prev, run_id))


_EVENT_COLUMNS = "e.seq, e.type, e.step_path, e.payload, e.at, e.hash"
_INSERT_RUN = "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?, 0, '')"
_INSERT_RUN_KEYED = "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?, 0, '', ?)"
_INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)"
_INSERT_KEYED = ("INSERT INTO events (id, run_id, seq, type, step_path, payload, at, hash) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")

# Rows whose values do not have the types rows_shape.CHAINED_EVENT asks for, counted by
# SQLite (the same check as `checked`, without a Python call a value).
_MISTYPED = (
    "NOT (typeof(e.seq) = 'integer' AND typeof(e.type) = 'text' AND "
    "typeof(e.step_path) IN ('text', 'null') AND typeof(e.payload) = 'text' AND "
    "typeof(e.at) IN ('real', 'integer') AND typeof(e.hash) IN ('text', 'null'))")


def _next_run_no(db: sqlite3.Connection) -> int:
    """A number no run has used: above every run's and every event key's (the events
    of a run row someone deleted keep their range)."""
    top_run, top_key = db.execute("SELECT (SELECT max(run_no) FROM runs), "
                                  "(SELECT max(id) FROM events)").fetchone()
    number = max(int(top_run or 0), int(top_key or 0) // KEY_SPAN) + 1
    if number >= KEY_SPAN:
        raise StoreUnavailable("the event store has no run numbers left")
    return number

# Content-addressed: an existing row is rewritten only when its bytes differ (damaged).
_PUT_INLINE = ("INSERT INTO artifacts VALUES (?, ?) ON CONFLICT(ref) DO UPDATE "
               "SET data = excluded.data WHERE data IS NOT excluded.data")


def _payload(text: str, chain_hash: str | None) -> dict[str, Any]:
    """A stored JSON object. Payloads of events chained in form v2 were written by
    `dumps_text` (orjson reads them); anything older through `json` (exact for an
    integer beyond 64 bits, which orjson would read as a float)."""
    value = loads_marked(text) if chain_hash and chain_hash.startswith(FORM) else loads(text)
    if not isinstance(value, dict):
        raise ValueError("a payload is not an object")
    return value


_ARTIFACT_REF = re.compile(r"artifact://sha256:[0-9a-f]{64}")


async def _write_file(target: Path, data: bytes, digest: str, durable: bool) -> None:
    """Write to a private temp name, fsync (when durable), rename into place; the temp
    file is removed whatever goes wrong (a full disk must not leave half an artifact
    behind). The rename alone makes a complete file appear to a killed process."""
    import aiofiles
    import aiofiles.os

    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temp = target.with_name(f".{digest}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        async with aiofiles.open(temp, "wb", opener=_private_new_file) as fh:
            await fh.write(data)
            await fh.flush()
            if durable:
                os.fsync(fh.fileno())
        await aiofiles.os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        _fsync_dir(target.parent)


async def _read_file(path: Path) -> bytes:
    """A regular file's bytes; never through a symlink, never a FIFO or device."""
    import aiofiles

    async with aiofiles.open(path, "rb", opener=open_regular) as fh:
        return bytes(await fh.read())


def _private_new_file(path: str, flags: int) -> int:
    """Open a new file 0600, never through a symlink, never an existing one."""
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def local_world(data_dir: str | Path = DEFAULT_DATA_DIR,
                max_concurrent_steps: int = DEFAULT_MAX_CONCURRENT_STEPS,
                durability: str = DEFAULT_DURABILITY) -> LocalWorld:
    """The spec's `localWorld({dataDir, maxConcurrentSteps})`; `durability` is the
    default of runs started in it (strict | process; a run may choose its own)."""
    return LocalWorld(data_dir, max_concurrent_steps, durability)

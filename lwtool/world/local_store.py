"""The local world's SQLite store: the data dir's layout, the schema (made under a temp
name and linked into place), WAL mode, the hash-chain migration, and why a store that
is not damaged cannot be used (read-only, another user's, full)."""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import time
from pathlib import Path

from lwtool.world.base import StoreDamaged, StoreUnavailable, WorldError
from lwtool.world.chain import GENESIS, event_hash

LAYOUT = ("events", "artifacts", "locks", "outer-loops", "memory", "runs", "skills-cache")
# WAL pages before a checkpoint, by synchronous level. FULL (strict) commits checkpoint
# early: a small WAL is written over in place after each checkpoint, and an fdatasync
# of blocks the file has already costs less than one that also extends it (ext4:
# 175-185 against 250-330 us a commit; a strict step of a 200-step chain 484 -> 344
# us). NORMAL (process) commits are not synced one by one, so there fewer checkpoints
# (each one syncs) cost less: 4,000 pages, whose rewritten pages (a run's head, index
# pages) are copied once per checkpoint.
WAL_CHECKPOINT_PAGES = {"FULL": 128, "NORMAL": 4000}
# The page size of a new store (existing stores keep theirs; SQLite reads any). A commit
# rewrites whole pages into the WAL (a step's: the events' leaf, the artifact's, the run
# head's), and every WAL byte is synced once, by a strict commit or later by a
# checkpoint or the close: 1 KB pages write ~8 KB of WAL a step where 4 KB pages wrote
# ~17 KB (bench/store_layout.py). Inline artifacts of 100-256 KB take ~2x as long to
# write and read in 1 KB pages; a step's own rows are smaller than a 4 KB page.
PAGE_SIZE = 1024

SCHEMA = """
CREATE TABLE IF NOT EXISTS versions (
  version_id TEXT PRIMARY KEY,
  lwir TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS version_meta (
  version_id TEXT PRIMARY KEY REFERENCES versions(version_id),
  meta TEXT NOT NULL
) WITHOUT ROWID;
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


def make_layout(data_dir: Path, db_path: Path) -> None:
    """The folders, then the database: built under a temp name and renamed into place,
    so an events.db that exists is always one this world finished creating (a
    zero-length or missing-table one is damage, never re-created silently)."""
    # Private: inputs, outputs and prompts may hold secrets (0700 folders, 0600 files).
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name in LAYOUT:
        (data_dir / name).mkdir(mode=0o700, exist_ok=True)
    if db_path.exists() or db_path.is_symlink():
        if db_path.is_file() and db_path.stat().st_size == 0:
            raise StoreDamaged(f"the event store {db_path} is empty (truncated); "
                               "move it away to start a new data dir")
        return
    temp = db_path.with_name(f".events.db.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    os.close(private_new_file(str(temp), os.O_WRONLY))
    try:
        db = sqlite3.connect(temp, isolation_level=None)
        try:
            db.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # before the first table
            db.executescript(SCHEMA)
            db.execute("PRAGMA user_version = 4")
            # WAL is written into the file's header: openers never switch the
            # journal mode (which takes an exclusive lock other first opens hold
            # off). Closing the only connection removes the temp's -wal/-shm.
            db.execute("PRAGMA journal_mode=WAL")
        finally:
            db.close()
        with open(temp, "rb+") as fh:
            os.fsync(fh.fileno())
        try:  # link, not rename: never replaces a store another process just made
            os.link(temp, db_path)
        except FileExistsError:
            return
        fsync_dir(db_path.parent)
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            leftover.unlink(missing_ok=True)


def store_error(db_path: Path, exc: sqlite3.DatabaseError | UnicodeDecodeError) -> WorldError:
    """Damage (not a database, corrupt pages, text that is not UTF-8) apart from a
    store that is fine but cannot be used now (read-only, full, not ours, busy).
    SQLite hands back text as it was written: bytes edited into it that are not
    UTF-8 fail to decode, a UnicodeDecodeError rather than a DatabaseError."""
    where = f"the event store {db_path}"
    if isinstance(exc, UnicodeDecodeError):
        return StoreDamaged(f"{where} is damaged: it holds text that is not UTF-8 "
                            "(edited bytes)")
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return StoreDamaged(f"{where} is damaged: {exc}")
    reason = unusable_because(db_path) or SQLITE_REASONS.get(code)
    return StoreUnavailable(f"{where} cannot be used: {reason or exc}")


SQLITE_REASONS = {
    sqlite3.SQLITE_READONLY: "it is read-only (a read-only mount, or another user's file)",
    sqlite3.SQLITE_CANTOPEN: "it cannot be opened (permission denied, or another user's "
                             "folder)",
    sqlite3.SQLITE_PERM: "permission denied",
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_IOERR: "a disk I/O error (the device failed or is full)",
    sqlite3.SQLITE_BUSY: "another process holds it locked",
}


def on_read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def unusable_because(path: Path) -> str | None:
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


def os_reason(exc: OSError) -> str:
    """An OSError as the cause a user can act on."""
    reasons = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.EROFS: "it is on a read-only file system",
               errno.ENOSPC: "no space left on the device", errno.EDQUOT: "disk quota exceeded",
               errno.ELOOP: "it is a symbolic link", errno.EISDIR: "it is a folder",
               errno.ENOTDIR: "a part of its path is not a folder"}
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return f"{reason} ({exc.filename})" if exc.filename else reason


def ensure_wal(db: sqlite3.Connection, wait: float = 10.0) -> None:
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


def event_columns(db: sqlite3.Connection) -> set[str]:
    return {r[1] for r in db.execute("PRAGMA table_info(events)")}


def add_hash_chain(db: sqlite3.Connection) -> None:
    """Bring a store written before event hash chains up to date: add the columns and
    chain the events already there (once; later opens find the columns)."""
    db.execute("BEGIN IMMEDIATE")
    if "hash" in event_columns(db):
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


def add_version_meta(db: sqlite3.Connection) -> None:
    """Bring a store written before versions kept their record (lwtool.lock.version_record)
    up to date: a table of its own, so lwtool releases before it write versions as
    they did (versions registered before have no record)."""
    db.execute("CREATE TABLE IF NOT EXISTS version_meta (version_id TEXT PRIMARY KEY "
               "REFERENCES versions(version_id), meta TEXT NOT NULL) WITHOUT ROWID")


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


def private_new_file(path: str, flags: int) -> int:
    """Open a new file 0600, never through a symlink, never an existing one."""
    return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

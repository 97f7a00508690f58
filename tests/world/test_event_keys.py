"""The event table's layouts: stores made now key each row (the events of one commit)
by its run's number and its first event's seq (one key range a run, appended in
order); stores made before keep their (run_id, seq) layout and are read and written
as they are."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.world.base import NewEvent, StoreDamaged, StoreUnavailable, WorldError
from lwtool.world.local import LocalWorld
from lwtool.world.local_events import KEY_SPAN, MAX_SEQ, chained, packed
from lwtool.world.local_store import PAGE_SIZE

VERSION = workflow_version_id({"kind": "Workflow"})
REPLY = "harness.model.responded"

# The schema lwtool wrote before event keys (format 2), as such a store holds it.
FORMAT_2 = """
CREATE TABLE versions (version_id TEXT PRIMARY KEY, lwir TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, version_id TEXT NOT NULL REFERENCES
  versions(version_id), status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL
  NOT NULL, input TEXT NOT NULL, options TEXT NOT NULL, last_seq INTEGER NOT NULL DEFAULT
  0, last_hash TEXT NOT NULL DEFAULT '');
CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
  step_path TEXT, payload TEXT NOT NULL, at REAL NOT NULL, hash TEXT,
  PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE artifacts (ref TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 2;
PRAGMA journal_mode = WAL;
"""


def _interleave(world: LocalWorld, other: LocalWorld) -> None:
    """Two runs, written by two connections, their commits interleaved."""
    for run_id, by in (("run_a", world), ("run_b", other)):
        by.register_version(VERSION, {"kind": "Workflow"})
        by.create_run(run_id, VERSION, {}, {}, [NewEvent("RunStarted", {"run": run_id})])
    for n in range(1, 30):
        for run_id, by in (("run_a", world), ("run_b", other)):
            by.append(run_id, [NewEvent(REPLY, {"n": n, "usage": {}}, f"s{n}"),
                               NewEvent("StepCompleted", {"n": n}, f"s{n}")])


def _check_two_runs(data: Path) -> None:
    fresh = LocalWorld(data)
    for run_id in ("run_a", "run_b"):
        events = fresh.events(run_id)
        assert [e.seq for e in events] == list(range(1, 60))
        assert events[0].payload == {"run": run_id}
        assert [e.payload["n"] for e in fresh.events(run_id, [REPLY])] == list(range(1, 30))
    replies = fresh.model_replies(["run_a", "run_b", "run_none"])
    assert sorted(replies) == ["run_a", "run_b"] and len(replies["run_a"]) == 29
    assert fresh.events("run_none") == []


def test_a_new_store_keys_each_run_as_one_range(tmp_path: Path) -> None:
    data = tmp_path / "data"
    _interleave(LocalWorld(data), LocalWorld(data))
    _check_two_runs(data)
    db = sqlite3.connect(data / "events" / "events.db")
    numbers = dict(db.execute("SELECT run_id, run_no FROM runs"))
    assert sorted(numbers.values()) == [1, 2]
    for run_id, run_no in numbers.items():
        keys = [k - run_no * KEY_SPAN for (k,) in db.execute(
            "SELECT id FROM events WHERE run_id = ? ORDER BY id", (run_id,))]
        # A row a commit, keyed by its first event's seq: RunStarted alone, then pairs.
        assert keys == [1, *range(2, 60, 2)]
    assert db.execute("PRAGMA user_version").fetchone()[0] == 4


def test_a_format_2_store_is_used_as_it_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "events").mkdir(parents=True)
    db = sqlite3.connect(data / "events" / "events.db")
    db.executescript(FORMAT_2)
    db.close()
    _interleave(LocalWorld(data), LocalWorld(data))
    _check_two_runs(data)
    db = sqlite3.connect(data / "events" / "events.db")
    assert "id" not in {r[1] for r in db.execute("PRAGMA table_info(events)")}
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 2 * 30  # a commit's
    assert LocalWorld(data, read_only=True).events("run_a")[-1].seq == 59


def test_run_numbers_are_never_reused(tmp_path: Path) -> None:
    """A run row deleted behind lwtool's back leaves its events' keys taken: the next
    run is numbered above them, not given the deleted run's number."""
    data = tmp_path / "data"
    world = LocalWorld(data)
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.create_run("run_b", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.close()
    db = sqlite3.connect(data / "events" / "events.db", isolation_level=None)
    db.execute("DELETE FROM runs WHERE run_id = 'run_b'")
    db.close()
    world = LocalWorld(data)
    world.create_run("run_c", VERSION, {}, {}, [NewEvent("RunStarted", {"c": 1})])
    world.append("run_c", [NewEvent("RunCompleted", {})])
    assert [e.payload for e in world.events("run_c")] == [{"c": 1}, {}]
    assert world._db.execute("SELECT run_no FROM runs WHERE run_id = 'run_c'"
                             ).fetchone()[0] == 3


def test_a_damaged_run_number_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    world = LocalWorld(data)
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.close()
    db = sqlite3.connect(data / "events" / "events.db", isolation_level=None)
    db.execute("UPDATE runs SET run_no = 'x' WHERE run_id = 'run_a'")
    db.close()
    with pytest.raises(StoreDamaged, match="run run_a: its run number is damaged"):
        LocalWorld(data).append("run_a", [NewEvent("RunCompleted", {})])


def test_a_run_cannot_outgrow_its_key_range() -> None:
    with pytest.raises(WorldError, match="would exceed 4,294,967,295 events"):
        chained("run_a", (MAX_SEQ - 1, ""), [NewEvent("A", {}), NewEvent("B", {})], 1.0,
                 KEY_SPAN)
    _, rows, head = chained("run_a", (MAX_SEQ - 1, ""), [NewEvent("A", {})], 1.0, KEY_SPAN)
    assert head[0] == MAX_SEQ and rows[0][0] == KEY_SPAN + MAX_SEQ
    with pytest.raises(WorldError, match="would exceed 4,294,967,295 events"):
        packed("run_a", (MAX_SEQ - 1, ""), [NewEvent("A", {}), NewEvent("B", {})], 1.0,
               KEY_SPAN)
    _, rows, head = packed("run_a", (MAX_SEQ - 2, ""), [NewEvent("A", {}), NewEvent("B", {})],
                           1.0, KEY_SPAN)
    assert head[0] == MAX_SEQ and rows[0][0] == KEY_SPAN + MAX_SEQ - 1 and len(rows) == 1


def test_a_store_out_of_run_numbers_refuses_a_new_run(tmp_path: Path) -> None:
    data = tmp_path / "data"
    world = LocalWorld(data)
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.close()
    db = sqlite3.connect(data / "events" / "events.db", isolation_level=None)
    db.execute("UPDATE runs SET run_no = ? WHERE run_id = 'run_a'", (MAX_SEQ,))
    db.close()
    world = LocalWorld(data)
    with pytest.raises(StoreUnavailable, match="no run numbers left"):
        world.create_run("run_b", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    assert [r.run_id for r in world.list_runs()] == ["run_a"]


@pytest.mark.parametrize(("durable", "most", "least"), [(True, 0, 128 + 20),
                                                         (False, 300, 4000)])
def test_the_wal_is_checkpointed_by_synchronous_level(tmp_path: Path, durable: bool,
                                                      most: int, least: int) -> None:
    """Fsynced (strict) commits checkpoint every 128 WAL pages, so the WAL stays small
    and is written over in place (cheaper fsyncs than a growing file); unsynced
    (process) commits every 4,000. Pages counted from the WAL's size."""
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("r", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    for n in range(100):
        world.append("r", [NewEvent("StepCompleted", {"text": "x" * 3000}, f"s{n}")],
                     durable=durable)
    frame = PAGE_SIZE + 24  # a WAL frame: a page and its header
    pages = (tmp_path / "data" / "events" / "events.db-wal").stat().st_size // frame
    assert most <= pages <= least, pages
    world.close()


def test_a_new_store_has_small_pages_and_an_old_one_keeps_its_own(tmp_path: Path) -> None:
    """New stores are made with PAGE_SIZE pages (a commit rewrites whole pages into the
    WAL); a store made with SQLite's default 4 KB pages is used as it is."""
    new = LocalWorld(tmp_path / "new")
    new.close()
    db = sqlite3.connect(tmp_path / "new" / "events" / "events.db")
    assert db.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE
    old = tmp_path / "old"
    (old / "events").mkdir(parents=True)
    db = sqlite3.connect(old / "events" / "events.db")
    db.executescript(FORMAT_2)
    assert db.execute("PRAGMA page_size").fetchone()[0] == 4096
    db.close()
    _interleave(LocalWorld(old), LocalWorld(old))
    _check_two_runs(old)
    db = sqlite3.connect(old / "events" / "events.db")
    assert db.execute("PRAGMA page_size").fetchone()[0] == 4096

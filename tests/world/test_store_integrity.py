"""A store someone edited, truncated or pointed elsewhere: every read is verified, damage
is a clear StoreDamaged naming the run and what is wrong, nothing is followed out of the
data dir, and an older store is brought up to date in place."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.world import local as local_module
from lwtool.world.base import NewEvent, StoreDamaged
from lwtool.world.local import LocalWorld
from lwtool.world.local_store import ensure_wal, make_layout
from tests.conftest import edit_store

VERSION = workflow_version_id({"kind": "Workflow"})


def _world_with_run(tmp_path: Path, events: int = 4) -> LocalWorld:
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {"n": 0})])
    for n in range(1, events):
        world.append("run_a", [NewEvent("StepCompleted", {"n": n}, f"s{n}")])
    return world


EDITS = {
    "payload edited": ("UPDATE events SET payload = '{\"n\":9}' WHERE seq = 2",
                       "event 2 (StepCompleted) does not match its hash"),
    "middle event deleted": ("DELETE FROM events WHERE seq = 2",
                             "event 2 is missing (the next stored event is 3)"),
    "tail cut off": ("DELETE FROM events WHERE seq = 4",
                     "the log ends at event 3 but the run's head is event 4"),
    "events swapped": ("UPDATE events SET seq = 100 WHERE seq = 2; UPDATE events SET seq = 2 "
                       "WHERE seq = 3; UPDATE events SET seq = 3 WHERE seq = 100",
                       "event 2 (StepCompleted) does not match"),
    "event forged": ("INSERT INTO events (run_id, seq, type, step_path, payload, at, hash) "
                     "VALUES ('run_a', 5, 'RunCompleted', NULL, '{}', 1.0, '00')",
                     "event 5 (RunCompleted) does not match its hash"),
    "timestamp moved": ("UPDATE events SET at = at + 1 WHERE seq = 3",
                        "event 3 (StepCompleted) does not match its hash"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_event_log_is_refused_naming_the_run_and_event(tmp_path: Path,
                                                                 edit: str) -> None:
    world = _world_with_run(tmp_path)
    statement, expected = EDITS[edit]
    edit_store(tmp_path / "data", *statement.split("; "), rechain=None)
    with pytest.raises(StoreDamaged) as info:
        world.events("run_a")
    assert str(info.value).startswith("run run_a: the event log is damaged: ")
    assert expected in str(info.value)


def test_appends_continue_the_chain_across_processes_and_reopens(tmp_path: Path) -> None:
    _world_with_run(tmp_path).close()
    world = LocalWorld(tmp_path / "data")
    world.append("run_a", [NewEvent("RunCompleted", {})], status="completed")
    assert [e.seq for e in world.events("run_a")] == [1, 2, 3, 4, 5]


def test_a_store_from_before_hash_chains_is_chained_in_place(tmp_path: Path) -> None:
    """The previous release's schema (no hash columns) opens, and its runs verify."""
    events = tmp_path / "data" / "events"
    events.mkdir(parents=True)
    db = sqlite3.connect(events / "events.db")
    db.executescript("""
      CREATE TABLE versions (version_id TEXT PRIMARY KEY, lwir TEXT NOT NULL);
      CREATE TABLE runs (run_id TEXT PRIMARY KEY, version_id TEXT NOT NULL, status TEXT NOT
        NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, input TEXT NOT NULL,
        options TEXT NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL,
        step_path TEXT, payload TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (run_id, seq))
        WITHOUT ROWID;
      CREATE TABLE artifacts (ref TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;
      INSERT INTO runs VALUES ('run_old', 'sha256:x', 'running', 1, 1, '{}', '{}', 2);
      INSERT INTO events VALUES ('run_old', 1, 'RunStarted', NULL, '{"a":1}', 1.5);
      INSERT INTO events VALUES ('run_old', 2, 'StepCompleted', 's', '{"b":2}', 2.5);
    """)
    db.close()
    world = LocalWorld(tmp_path / "data")
    assert [e.payload for e in world.events("run_old")] == [{"a": 1}, {"b": 2}]
    world.append("run_old", [NewEvent("RunCompleted", {})])
    world.close()
    assert len(LocalWorld(tmp_path / "data").events("run_old")) == 3


def test_a_truncated_or_foreign_events_db_is_damage_never_recreated(tmp_path: Path) -> None:
    _world_with_run(tmp_path).close()
    db = tmp_path / "data" / "events" / "events.db"
    for name in ("events.db-wal", "events.db-shm"):
        (db.parent / name).unlink(missing_ok=True)
    db.write_bytes(b"")
    with pytest.raises(StoreDamaged, match="is empty"):
        LocalWorld(tmp_path / "data")
    assert db.stat().st_size == 0  # left for the user to inspect, not re-created
    db.write_bytes(b"not a database " * 100)
    with pytest.raises(StoreDamaged, match="is damaged: file is not a database"):
        LocalWorld(tmp_path / "data")
    db.unlink()
    sqlite3.connect(db).execute("CREATE TABLE other (x)").connection.close()
    with pytest.raises(StoreDamaged, match="lacks lwtool's tables"):
        LocalWorld(tmp_path / "data")


def test_concurrent_first_opens_share_one_store(tmp_path: Path) -> None:
    """Many threads opening new data dirs at once, round after round: one store each,
    no open refused as locked, no events lost. (Openers once switched a new store to
    WAL themselves, which needs an exclusive lock: under load one in ~100 rounds
    failed "another process holds it locked".)"""
    for round_ in range(6):
        data = tmp_path / f"data{round_}"
        errors: list[BaseException] = []
        start = threading.Barrier(8)

        def open_and_write(n: int, data: Path = data, errors: list[BaseException] = errors,
                           start: threading.Barrier = start) -> None:
            try:
                start.wait()
                world = LocalWorld(data)
                world.register_version(VERSION, {"kind": "Workflow"})
                world.create_run(f"run_{n}", VERSION, {}, {}, [NewEvent("RunStarted", {})])
                world.close()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=open_and_write, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        assert len(LocalWorld(data).list_runs()) == 8
        assert not list((data / "events").glob(".events.db.*"))


def test_first_open_waits_for_a_faster_openers_write(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The race behind the above, made certain: a faster opener is already writing to
    the new store when this one starts using it. A store made in WAL mode lets this
    one wait its turn; one its openers switched to WAL refused it at once (a switch
    under another's write lock is refused without waiting, to avoid deadlock)."""
    holders: list[sqlite3.Connection] = []

    def make_then_lock(data_dir: Path, db_path: Path) -> None:
        make_layout(data_dir, db_path)
        holder = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        holders.append(holder)
        threading.Timer(0.5, holder.close).start()

    monkeypatch.setattr(local_module, "make_layout", make_then_lock)
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    assert holders and world.list_runs() == []
    assert (tmp_path / "data/events/events.db").read_bytes()[18:20] == b"\x02\x02"  # WAL


def test_an_older_rollback_journal_store_is_switched_to_wal_despite_a_writer(
        tmp_path: Path) -> None:
    """A store made before stores were born WAL: its first opener switches it, and
    waits for a writer rather than being refused at once."""
    LocalWorld(tmp_path / "data").close()
    db_path = tmp_path / "data" / "events" / "events.db"
    sqlite3.connect(db_path).execute("PRAGMA journal_mode=DELETE").connection.close()
    writer = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    writer.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, writer.rollback).start()
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    assert world._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer.close()


def test_a_switch_to_wal_held_off_past_its_wait_is_refused_as_locked(tmp_path: Path) -> None:
    db_path = tmp_path / "old.db"
    sqlite3.connect(db_path).execute("CREATE TABLE t (x)").connection.close()
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    opener = sqlite3.connect(db_path, isolation_level=None)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        ensure_wal(opener, wait=0.2)
    assert 0.2 <= time.monotonic() - started < 5
    writer.rollback()
    ensure_wal(opener, wait=0.2)
    assert opener.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_concurrent_first_opens_by_processes(tmp_path: Path) -> None:
    """Separate processes released together onto one new data dir: all succeed."""
    go = tmp_path / "go"
    script = (
        "import sys, time, pathlib\n"
        "from lwtool.world.local import LocalWorld\n"
        "from lwtool.world.base import NewEvent\n"
        "go = pathlib.Path(sys.argv[1])\n"
        "while not go.exists(): time.sleep(0.001)\n"
        "w = LocalWorld(sys.argv[2]); w.register_version(sys.argv[3], {'kind': 'Workflow'})\n"
        "w.create_run('run_' + sys.argv[4], sys.argv[3], {}, {}, [NewEvent('RunStarted', {})])\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(go), str(tmp_path / "data"),
                               VERSION, str(n)], stderr=subprocess.PIPE, text=True)
             for n in range(6)]
    time.sleep(1.0)  # let every process import and wait at the gate
    go.touch()
    failures = [p.communicate(timeout=60)[1] for p in procs if p.wait(timeout=60) != 0]
    assert not failures
    world = LocalWorld(tmp_path / "data")
    assert len(world.list_runs()) == 6
    assert world._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("ref", ["artifact://sha256:../../../../etc/passwd",
                                 "artifact://sha256:" + "A" * 64, "file:///dev/zero",
                                 "artifact://sha256:" + "0" * 63])
def test_an_artifact_ref_that_is_no_content_address_is_never_followed(tmp_path: Path,
                                                                       ref: str) -> None:
    world = LocalWorld(tmp_path / "data")
    with pytest.raises(StoreDamaged, match="is not an artifact address of this store"):
        asyncio.run(world.get_artifact(ref))


@pytest.mark.parametrize("kind", ["symlink to /dev/zero", "fifo", "folder"])
def test_an_artifact_file_that_is_not_a_regular_file_is_damage(tmp_path: Path,
                                                               kind: str) -> None:
    world = LocalWorld(tmp_path / "data")
    ref = asyncio.run(world.put_artifact(b"z" * 300_000))
    digest = ref.removeprefix("artifact://sha256:")
    path = tmp_path / "data" / "artifacts" / "sha256" / digest[:2] / digest
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(StoreDamaged, match="is not a regular file"):
        asyncio.run(asyncio.wait_for(world.get_artifact(ref), 10))


def test_a_damaged_run_row_is_damage_not_a_traceback(tmp_path: Path) -> None:
    world = _world_with_run(tmp_path)
    edit_store(tmp_path / "data", "UPDATE runs SET input = '{broken'", rechain=None)
    with pytest.raises(StoreDamaged, match="run run_a: its stored input or options"):
        world.get_run("run_a")


def test_a_chain_of_the_first_hash_form_verifies_and_goes_on_in_the_second(
        tmp_path: Path) -> None:
    """Logs written before hash form v2 (the payload inside a JSON array) still verify;
    a run resumed now continues them in v2, and an edit is caught in either part."""
    from lwtool.world.chain import FORM, _first_form_hash

    world = _world_with_run(tmp_path)
    world.close()
    db = sqlite3.connect(tmp_path / "data" / "events" / "events.db")
    prev = ""
    for seq, type_, path, payload, at in db.execute(
            "SELECT seq, type, step_path, payload, at FROM events ORDER BY seq").fetchall():
        prev = _first_form_hash(prev, "run_a", seq, type_, path, at, payload)
        db.execute("UPDATE events SET hash = ? WHERE seq = ?", (prev, seq))
    db.execute("UPDATE runs SET last_hash = ?", (prev,))
    db.commit()
    db.close()
    world = LocalWorld(tmp_path / "data")
    world.append("run_a", [NewEvent("RunCompleted", {})], status="completed")
    hashes = [r[0] for r in sqlite3.connect(tmp_path / "data" / "events" / "events.db")
              .execute("SELECT hash FROM events ORDER BY seq")]
    assert [h.startswith(FORM) for h in hashes] == [False] * 4 + [True]
    assert [e.seq for e in world.events("run_a")] == [1, 2, 3, 4, 5]
    for seq in (2, 5):
        edit_store(tmp_path / "data", f"UPDATE events SET at = at + 1 WHERE seq = {seq}",
                   rechain=None)
        with pytest.raises(StoreDamaged, match=f"event {seq} .* does not match its hash"):
            world.events("run_a")
        edit_store(tmp_path / "data", f"UPDATE events SET at = at - 1 WHERE seq = {seq}",
                   rechain=None)


def test_two_worlds_appending_to_one_run_keep_one_chain(tmp_path: Path) -> None:
    """Each world keeps the head it committed last; one that another writer moved is
    read again, never forked."""
    first = _world_with_run(tmp_path)
    second = LocalWorld(tmp_path / "data")
    for n in range(3):
        first.append("run_a", [NewEvent("StepCompleted", {"by": "first", "n": n}, "x")])
        second.append("run_a", [NewEvent("StepCompleted", {"by": "second", "n": n}, "y"),
                                NewEvent("StepCompleted", {"by": "second"}, "z")])
    events = LocalWorld(tmp_path / "data").events("run_a")
    assert [e.seq for e in events] == list(range(1, 14))
    assert [e.payload.get("by") for e in events[4:]] == ["first", "second", "second"] * 3


def test_the_chain_hash_of_text_with_a_lone_surrogate_is_over_its_surrogatepass_bytes(
) -> None:
    """The hash is taken over UTF-8 (the fast codec path); text with a lone surrogate,
    which strict UTF-8 refuses, is hashed over its surrogatepass bytes, never lost."""
    import hashlib

    from lwtool.world.chain import FORM, chained_hash

    def expected(material: str) -> str:
        return FORM + hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    assert chained_hash("p", "r", 1, "t", None, "2.5", '"\ud800"') == \
        expected('p\nr\n1\n1:t\n2.5\n-\n"\ud800"')
    assert chained_hash("p", "r", 2, "t", "s\u00e9", "2.5", '"\u2603"') == \
        expected('p\nr\n2\n1:t\n2.5\n2:s\u00e9\n"\u2603"')

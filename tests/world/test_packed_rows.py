"""Packed rows: the local world keeps the events of one commit in one row, hash-chained
as a whole. What goes in comes back event by event; a store whose runs were written a
row an event (before packed rows) is read, verified and appended to as it is; an edit
of a packed row is damage naming its events; a type filter finds events inside rows."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from lwtool.canonical.digest import workflow_version_id
from lwtool.world.base import NewEvent, StoreDamaged
from lwtool.world.chain import PACKED, packed_hash
from lwtool.world.local import LocalWorld
from tests.conftest import edit_store, unpack_rows

VERSION = workflow_version_id({"kind": "Workflow"})
BIG = 2 ** 70  # beyond orjson's integers: the row is read back through json


def _rows(data: Path, run_id: str = "run_a") -> list[tuple[int, str, str | None, str]]:
    db = sqlite3.connect(data / "events" / "events.db")
    try:
        return db.execute("SELECT seq, type, step_path, hash FROM events WHERE run_id = ? "
                          "ORDER BY seq", (run_id,)).fetchall()
    finally:
        db.close()


def _run(data: Path) -> LocalWorld:
    """run_a: RunStarted alone, then two commits of three events (one step each)."""
    world = LocalWorld(data)
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {"n": 0})])
    for step in ("a", "b"):
        world.append("run_a", [NewEvent("StepAttemptStarted", {"step": step}, step),
                               NewEvent("harness.model.responded",
                                        {"usage": {"inputTokens": 3}, "big": BIG}, step),
                               NewEvent("StepCompleted", {"step": step}, step)])
    return world


def test_a_commit_is_one_row_and_reads_back_event_by_event(tmp_path: Path) -> None:
    world = _run(tmp_path / "data")
    rows = _rows(tmp_path / "data")
    assert [(r[0], r[1], r[2]) for r in rows] == [
        (1, "RunStarted", None),
        (2, "StepAttemptStarted harness.model.responded StepCompleted", None),
        (5, "StepAttemptStarted harness.model.responded StepCompleted", None)]
    assert not rows[0][3].startswith(PACKED) and rows[1][3].startswith(PACKED)
    fresh = LocalWorld(tmp_path / "data", read_only=True)
    events = fresh.events("run_a")
    assert [(e.seq, e.type, e.step_path) for e in events] == [
        (1, "RunStarted", None), (2, "StepAttemptStarted", "a"),
        (3, "harness.model.responded", "a"), (4, "StepCompleted", "a"),
        (5, "StepAttemptStarted", "b"), (6, "harness.model.responded", "b"),
        (7, "StepCompleted", "b")]
    assert events[2].payload["big"] == BIG  # exact, not a float
    assert events[1].at == events[3].at != events[0].at  # one commit, one time
    assert [(e.seq, e.payload) for e in world.events("run_a", ["StepCompleted", "RunStarted"])
            ] == [(1, {"n": 0}), (4, {"step": "a"}), (7, {"step": "b"})]
    replies = fresh.model_replies(["run_a"])  # each reply's payload, out of its row
    assert replies["run_a"] == [{"usage": {"inputTokens": 3}, "big": BIG}] * 2


def test_a_type_filter_matches_whole_types_only(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.append("run_a", [NewEvent("Step", {"n": 1}), NewEvent("StepX", {"n": 2}),
                           NewEvent("XStep", {"n": 3})])
    assert [e.payload for e in world.events("run_a", ["Step"])] == [{"n": 1}]
    assert world.events("run_a", ["Ste"]) == []
    assert [e.seq for e in world.events("run_a", [])] == [1, 2, 3, 4]  # no filter


def test_a_commit_with_a_type_holding_a_space_keeps_a_row_an_event(tmp_path: Path) -> None:
    """The type column lists a packed row's types space-separated: a type with a space
    in it cannot be listed, so its commit is written a row an event."""
    world = LocalWorld(tmp_path / "data")
    world.register_version(VERSION, {"kind": "Workflow"})
    world.create_run("run_a", VERSION, {}, {}, [NewEvent("RunStarted", {})])
    world.append("run_a", [NewEvent("Odd Type", {"n": 1}), NewEvent("Step", {"n": 2})])
    assert [(r[0], r[1]) for r in _rows(tmp_path / "data")] == [
        (1, "RunStarted"), (2, "Odd Type"), (3, "Step")]
    assert [e.payload for e in world.events("run_a", ["Odd Type"])] == [{"n": 1}]
    assert [e.type for e in LocalWorld(tmp_path / "data").events("run_a")] == [
        "RunStarted", "Odd Type", "Step"]


def test_a_run_written_a_row_an_event_goes_on_in_packed_rows(tmp_path: Path) -> None:
    """A store written before packed rows (one row an event, chained as such): read,
    verified and appended to as it is; the log then holds both kinds of rows."""
    data = tmp_path / "data"
    _run(data).close()
    conn = sqlite3.connect(data / "events" / "events.db", isolation_level=None)
    conn.execute("BEGIN")
    unpack_rows(conn)
    conn.execute("COMMIT")
    conn.close()
    assert [r[0] for r in _rows(data)] == list(range(1, 8))
    world = LocalWorld(data)
    world.append("run_a", [NewEvent("StepCompleted", {"step": "c"}, "c"),
                           NewEvent("RunCompleted", {})])
    assert [r[0] for r in _rows(data)] == [*range(1, 8), 8]
    events = LocalWorld(data, read_only=True).events("run_a")
    assert [e.seq for e in events] == list(range(1, 10))
    assert events[2].payload["big"] == BIG and events[-1].type == "RunCompleted"


PACKED_EDITS = {
    "payload edited inside a row": (
        "UPDATE events SET payload = replace(payload, '\"step\":\"b\"', '\"step\":\"x\"') "
        "WHERE seq = 5",
        "events 5-7 (StepAttemptStarted, harness.model.responded, StepCompleted) do not "
        "match their hash"),
    "a row's types edited": (
        "UPDATE events SET type = 'StepAttemptStarted harness.model.responded' WHERE seq = 2",
        "events 2-3 (StepAttemptStarted, harness.model.responded) do not match"),
    "a step path given to a row": (
        "UPDATE events SET step_path = 'a' WHERE seq = 2",
        "events 2-4 (StepAttemptStarted, harness.model.responded, StepCompleted) do not "
        "match their hash"),
    "a row deleted": ("DELETE FROM events WHERE seq = 2",
                      "event 2 is missing (the next stored event is 5)"),
    "the last row cut off": ("DELETE FROM events WHERE seq = 5",
                             "the log ends at event 4 but the run's head is event 7"),
}


@pytest.mark.parametrize("edit", sorted(PACKED_EDITS))
def test_an_edited_packed_row_is_damage_naming_its_events(tmp_path: Path, edit: str) -> None:
    _run(tmp_path / "data").close()
    statement, expected = PACKED_EDITS[edit]
    conn = sqlite3.connect(tmp_path / "data" / "events" / "events.db", isolation_level=None)
    conn.execute(statement)
    conn.close()
    with pytest.raises(StoreDamaged, match=re.escape(f"run run_a: the event log is damaged: "
                                                     f"{expected}")):
        LocalWorld(tmp_path / "data").events("run_a")


def test_a_rechained_row_that_does_not_hold_its_events_is_damage(tmp_path: Path) -> None:
    """A packed row whose hash was recomputed over a payload that does not hold the
    events its types name: the chain passes, reading the row back does not."""
    data = tmp_path / "data"
    _run(data).close()
    conn = sqlite3.connect(data / "events" / "events.db", isolation_level=None)
    (prev,) = conn.execute("SELECT hash FROM events WHERE seq = 1").fetchone()
    types = "StepAttemptStarted harness.model.responded StepCompleted"
    for payload, problem in (('[["StepAttemptStarted",null,{}]]', "does not hold 3 events"),
                             ('[["A",null,{}],["B",null,{}],["C",null,{}]]',
                              "event 2 in its row is not"),
                             ('{"a":1}', "does not hold 3 events")):
        (at,) = conn.execute("SELECT at FROM events WHERE seq = 2").fetchone()
        stored = packed_hash(prev, "run_a", 2, types, repr(at), payload)
        conn.execute("UPDATE events SET payload = ?, hash = ? WHERE seq = 2", (payload, stored))
        rest = conn.execute("SELECT seq, type, payload, at FROM events WHERE seq > 2 "
                            "ORDER BY seq").fetchall()
        head = stored
        for seq, type_, text, at_ in rest:
            head = packed_hash(head, "run_a", seq, type_, repr(at_), text)
            conn.execute("UPDATE events SET hash = ? WHERE seq = ?", (head, seq))
        conn.execute("UPDATE runs SET last_hash = ? WHERE run_id = 'run_a'", (head,))
        with pytest.raises(StoreDamaged, match=f"run run_a: an event payload is damaged "
                                               f"\\(.*{problem}"):
            LocalWorld(data).events("run_a")
    conn.close()


def test_edit_store_still_edits_single_events(tmp_path: Path) -> None:
    """The test helper writes packed rows out a row an event before an edit by seq."""
    _run(tmp_path / "data").close()
    edit_store(tmp_path / "data", "UPDATE events SET payload = '{}' WHERE seq = 6",
               rechain=None)
    with pytest.raises(StoreDamaged, match="event 6 \\(harness.model.responded\\) does not "
                                           "match its hash"):
        LocalWorld(tmp_path / "data").events("run_a")

"""How the local world keeps events: keyed by their run's number and seq, each one's
payload serialized once and its hash chained on the one before. Reading a payload or a
run row back is the same in the PostgreSQL world, which uses `payload` and
`run_record` too."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from lwtool.canonical.compact import dumps_text, loads, loads_marked
from lwtool.world.base import (
    Event,
    NewEvent,
    RunRecord,
    StoreDamaged,
    StoreUnavailable,
    WorldError,
)
from lwtool.world.chain import FORM, chained_hash

# Stores made from format 3 on key each event by its run's number and its seq (run_no *
# 2**32 + seq, the table's rowid): a run's events are one key range, appended in
# order, so a step's commit writes ~5.5 pages instead of the ~8.4 a (run_id, seq)
# WITHOUT ROWID key did (that index B-tree rebalanced on nearly every append). Older stores keep
# their layout and are read and written as they are.
KEY_SPAN = 2 ** 32
MAX_SEQ = KEY_SPAN - 1


def chained(run_id: str, head: tuple[int, str], events: Sequence[NewEvent], now: float,
             base: int | None) -> tuple[list[Event], list[tuple[Any, ...]], tuple[int, str]]:
    """The events as committed, their rows (payloads serialized once, each hash chained
    on the one before; keyed `base + seq` in a keyed store) and the run's head after."""
    seq, prev = head
    out, rows = [], []
    if seq + len(events) > MAX_SEQ:
        raise WorldError(f"run {run_id} would exceed {MAX_SEQ:,} events")
    at_text = repr(now)
    for event in events:
        seq += 1
        type_, payload_, path = event.type, event.payload, event.step_path
        text = dumps_text(payload_)
        prev = chained_hash(prev, run_id, seq, type_, path, at_text, text)
        out.append(Event(seq, run_id, type_, payload_, path, now))
        rows.append((run_id, seq, type_, path, text, now, prev) if base is None else
                    (base + seq, run_id, seq, type_, path, text, now, prev))
    return out, rows, (seq, prev)


EVENT_COLUMNS = "e.seq, e.type, e.step_path, e.payload, e.at, e.hash"
INSERT_RUN = "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?, 0, '')"
INSERT_RUN_KEYED = "INSERT INTO runs VALUES (?, ?, 'running', ?, ?, ?, ?, 0, '', ?)"
INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?)"
INSERT_KEYED = ("INSERT INTO events (id, run_id, seq, type, step_path, payload, at, hash) "
                 "VALUES (?, ?, ?, ?, ?, ?, ?, ?)")

# Rows whose values do not have the types rows_shape.CHAINED_EVENT asks for, counted by
# SQLite (the same check as `checked`, without a Python call a value).
MISTYPED = (
    "NOT (typeof(e.seq) = 'integer' AND typeof(e.type) = 'text' AND "
    "typeof(e.step_path) IN ('text', 'null') AND typeof(e.payload) = 'text' AND "
    "typeof(e.at) IN ('real', 'integer') AND typeof(e.hash) IN ('text', 'null'))")


def next_run_no(db: sqlite3.Connection) -> int:
    """A number no run has used: above every run's and every event key's (the events
    of a run row someone deleted keep their range)."""
    top_run, top_key = db.execute("SELECT (SELECT max(run_no) FROM runs), "
                                  "(SELECT max(id) FROM events)").fetchone()
    number = max(int(top_run or 0), int(top_key or 0) // KEY_SPAN) + 1
    if number >= KEY_SPAN:
        raise StoreUnavailable("the event store has no run numbers left")
    return number


def payload(text: str, chain_hash: str | None) -> dict[str, Any]:
    """A stored JSON object. Payloads of events chained in form v2 were written by
    `dumps_text` (orjson reads them); anything older through `json` (exact for an
    integer beyond 64 bits, which orjson would read as a float)."""
    value = loads_marked(text) if chain_hash and chain_hash.startswith(FORM) else loads(text)
    if not isinstance(value, dict):
        raise ValueError("a payload is not an object")
    return value


def run_record(row: Any) -> RunRecord:
    """A run row (run_id, version_id, status, created_at, updated_at, input, options)
    as a RunRecord; StoreDamaged when its input or options do not read back."""
    try:
        return RunRecord(row[0], row[1], row[2], row[3], row[4], loads(row[5]),
                         payload(row[6], None))
    except (ValueError, TypeError) as exc:
        raise StoreDamaged(f"run {row[0]}: its stored input or options are damaged "
                           f"({exc})") from None

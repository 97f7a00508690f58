"""How the local world keeps events: the events of one commit in one row (`packed`),
keyed by their run's number and first seq, each payload serialized once and the row's
hash chained on the one before; a commit of one event, and every event of a store
written before packed rows, in a row of its own (`chained`, which the PostgreSQL world
writes too). Reading rows back as events (`events_of`), a payload or a run row is the
same in both worlds."""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
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
from lwtool.world.chain import FORM, PACKED, chained_hash, packed_hash

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


def packed(run_id: str, head: tuple[int, str], events: Sequence[NewEvent], now: float,
           base: int | None) -> tuple[list[Event], list[tuple[Any, ...]], tuple[int, str]]:
    """As `chained`, with the events of the commit in one row: seq its first event's,
    type their types (space-separated, so that SQL can pick the rows that hold a type),
    no step path, the payload a JSON array of [type, step path, payload] and the hash
    `packed_hash`. One row instead of six: a step's commit inserts, hashes and reads
    back one (docs/durability.md). A single event keeps a row of its own."""
    if len(events) < 2 or any(" " in event.type for event in events):
        return chained(run_id, head, events, now, base)
    seq, prev = head
    if seq + len(events) > MAX_SEQ:
        raise WorldError(f"run {run_id} would exceed {MAX_SEQ:,} events")
    first, out = seq + 1, []
    for event in events:
        seq += 1
        out.append(Event(seq, run_id, event.type, event.payload, event.step_path, now))
    # One serialization for the row (what orjson cannot write, an integer beyond 64
    # bits, dumps_text writes through json, marked: read back the same way).
    text = dumps_text([[event.type, event.step_path, event.payload] for event in events])
    types = " ".join(event.type for event in events)
    prev = packed_hash(prev, run_id, first, types, repr(now), text)
    row = (run_id, first, types, None, text, now, prev)
    return out, [row if base is None else (base + first, *row)], (seq, prev)


def events_of(run_id: str, rows: Sequence[Sequence[Any]],
              types: Collection[str] | None = None) -> list[Event]:
    """Stored rows (EVENT_COLUMNS) as events, a packed row's each; only those of
    `types` when given. ValueError for a row that does not read back."""
    out: list[Event] = []
    for seq, type_, path, text, at, stored in rows:
        if not isinstance(stored, str) or not stored.startswith(PACKED):
            if types is None or type_ in types:
                out.append(Event(seq, run_id, type_, payload(text, stored), path, at))
            continue
        items = loads_marked(text)
        kinds = type_.split(" ")
        if not isinstance(items, list) or len(items) != len(kinds):
            raise ValueError(f"the row of events {seq}- does not hold {len(kinds)} events")
        for offset, (item, kind) in enumerate(zip(items, kinds, strict=True)):
            if not (isinstance(item, list) and len(item) == 3 and item[0] == kind
                    and (item[1] is None or isinstance(item[1], str))
                    and isinstance(item[2], dict)):
                raise ValueError(f"event {seq + offset} in its row is not [type, step path, "
                                 "payload]")
            if types is None or kind in types:
                out.append(Event(seq + offset, run_id, kind, item[2], item[1], at))
    return out


def read_events(run_id: str, rows: Sequence[Sequence[Any]],
                types: Collection[str] | None = None) -> list[Event]:
    """`events_of`, a row that does not read back being StoreDamaged naming the run."""
    try:
        return events_of(run_id, rows, types)
    except (ValueError, TypeError) as exc:
        raise StoreDamaged(f"run {run_id}: an event payload is damaged ({exc})") from None


def payloads_by_run(rows: Sequence[Sequence[Any]], types: Collection[str] | None = None
                    ) -> dict[str, list[dict[str, Any]]]:
    """Rows of (run id, *EVENT_COLUMNS), in commit order, as run id -> the payloads of
    its events (only those of `types` when given; a packed row's each), each decoded
    once; StoreDamaged as `read_events`."""
    out: dict[str, list[dict[str, Any]]] = {}
    for run_id, *row in rows:
        out.setdefault(str(run_id), []).extend(
            event.payload for event in read_events(str(run_id), [row], types))
    return out


def holding(types: Sequence[str]) -> tuple[str, list[str]]:
    """A condition (and its arguments) picking the rows that hold an event of `types`:
    an event's own row of one of them, or a packed row listing one."""
    marks = ",".join("?" * len(types))
    listed = " OR ".join("instr(' ' || e.type || ' ', ?) > 0" for _ in types)
    return (f"(e.type IN ({marks}) OR (e.hash LIKE '{PACKED}%' AND ({listed})))",
            [*types, *(f" {t} " for t in types)])


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

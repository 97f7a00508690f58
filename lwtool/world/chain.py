"""The hash chain that makes a run's event log tamper-evident.

Each event's hash covers the previous event's hash and the event exactly as stored
(run id, seq, type, step path, timestamp, payload text), so an edited, inserted,
reordered or deleted event breaks every hash after it; the run row keeps the head
(last seq and hash), so a cut-off tail shows too. The first event chains from "".
The local world keeps the events of one commit in one row: that row's hash covers
them all, the same way (`packed_hash`). A chain is evidence against accidents and
careless edits, not a signature: someone who rewrites the whole log can recompute it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

GENESIS = ""
FORM = "v2:"  # an event's own row; 64 bare hex digits are the first form's
PACKED = "v3:"  # a row holding the events of one commit (lwtool.world.local_events)


def event_hash(prev: str, run_id: str, seq: int, type_: str, step_path: str | None,
               at: float, payload_text: str) -> str:
    """`v2:` + SHA-256 of the event's fields, one a line, then the payload text as
    stored (hashed as it is, never escaped again). The previous hash, run id, seq and
    time cannot hold a newline; the type and step path are length-prefixed (a branch
    key may hold anything); no step path is `-`. TypeError for a value that is not
    text where text belongs (a store edited to hold bytes there)."""
    if not isinstance(payload_text, str):
        raise TypeError(f"an event payload is {type(payload_text).__name__}, not text")
    return chained_hash(prev, run_id, seq, type_, step_path, repr(at), payload_text)


def chained_hash(prev: str, run_id: str, seq: int, type_: str, step_path: str | None,
                 at_text: str, payload_text: str) -> str:
    """`event_hash` with the time already written (`repr(at)`: the events of one commit
    share it): one string, one SHA-256."""
    return FORM + _digest(prev, run_id, seq, type_, step_path, at_text, payload_text)


def packed_hash(prev: str, run_id: str, seq: int, types: str, at_text: str,
                payload_text: str) -> str:
    """`v3:` + the SHA-256 of a packed row (the events of one commit, from `seq` on;
    `types` their types, space-separated), its fields as `chained_hash` writes them
    with no step path."""
    return PACKED + _digest(prev, run_id, seq, types, None, at_text, payload_text)


def _digest(prev: str, run_id: str, seq: int, type_: str, step_path: str | None,
            at_text: str, payload_text: str) -> str:
    path = "-" if step_path is None else f"{len(step_path)}:{step_path}"
    material = f"{prev}\n{run_id}\n{seq}\n{len(type_)}:{type_}\n{at_text}\n{path}\n{payload_text}"
    return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()


def _first_form_hash(prev: str, run_id: str, seq: int, type_: str, step_path: str | None,
                     at: float, payload_text: str) -> str:
    """The first form (stores written before v2): the payload inside the JSON array."""
    material = json.dumps([prev, run_id, seq, type_, step_path, at, payload_text])
    return hashlib.sha256(material.encode()).hexdigest()


def chain_break(run_id: str, rows: Iterable[tuple[int, str, str | None, str, float, Any]],
                head_seq: int, head_hash: str) -> str | None:
    """What is wrong with a run's chain, or None when it is intact. `rows` are
    (seq, type, step path, payload text, at, hash) in seq order, an event's own or a
    packed row (the events of one commit: seq its first, type theirs, space-separated);
    the head is the run row's last seq and hash."""
    prev, expected_seq = GENESIS, 1
    for seq, type_, step_path, payload_text, at, stored in rows:
        if seq != expected_seq:
            return f"event {expected_seq} is missing (the next stored event is {seq})"
        if str(stored).startswith(PACKED):
            last = seq + type_.count(" ")
            if step_path is not None or not isinstance(payload_text, str) or stored != \
                    packed_hash(prev, run_id, seq, type_, repr(at), payload_text):
                return (f"events {seq}-{last} ({type_.replace(' ', ', ')}) do not match "
                        "their hash (edited or reordered)")
            prev, expected_seq = stored, last + 1
            continue
        form = event_hash if str(stored).startswith(FORM) else _first_form_hash
        if stored != form(prev, run_id, seq, type_, step_path, at, payload_text):
            return f"event {seq} ({type_}) does not match its hash (edited or reordered)"
        prev, expected_seq = stored, seq + 1
    if expected_seq - 1 != head_seq or prev != head_hash:
        return (f"the log ends at event {expected_seq - 1} but the run's head is event "
                f"{head_seq} (events were removed or added)")
    return None

"""What the event store's row layout costs, in raw SQLite (no lwtool code): one commit
per step boundary of a trivial step (six events of the sizes a tool.call step's events
have, the inline output's artifact row, the run head), with a row an event keyed
run_no * 2**32 + seq (the rowid; issue 32's step floor) and in format 2's
((run_id, seq) WITHOUT ROWID, which rebalanced its B-tree on nearly every append); the
keyed rows without the artifact row; and the six events packed in one row, without and
with the artifact row (the last: what the local world writes since packed rows). Each
in synchronous FULL (strict) and NORMAL (process), with the WAL frames (pages) a commit
writes; all in SQLite's default 4 KB pages, and the last layout again in the 1 KB pages
the local world makes new stores with (lwtool.world.local_store.PAGE_SIZE).

Run: .venv/bin/python bench/store_layout.py [--commits N] [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

KEYED = "keyed rows + artifact row"
UNKEYED = "(run_id, seq) rows + artifact row"  # format 2
PACKED = "one row + artifact row"  # what the local world writes since packed rows
LAYOUTS = (KEYED, UNKEYED, "keyed rows", "one row", PACKED)
# A tool.call step's six events: StepAttemptStarted, harness.session.started,
# harness.execute_step.started / .succeeded, harness.session.completed, StepCompleted.
SIZES = (170, 754, 144, 119, 122, 345)
RUN = "run_019ae5c0b1d2f00d"
SCHEMA = f"""
CREATE TABLE runs (run_id TEXT PRIMARY KEY, last_seq INTEGER, last_hash TEXT,
                   updated_at REAL, run_no INTEGER);
CREATE TABLE artifacts (ref TEXT PRIMARY KEY, data BLOB) WITHOUT ROWID;
INSERT INTO runs VALUES ('{RUN}', 0, '', 0, 7);
"""
EVENTS = {
    True: "CREATE TABLE events (id INTEGER PRIMARY KEY, run_id TEXT, seq INTEGER, type TEXT, "
          "step_path TEXT, payload TEXT, at REAL, hash TEXT)",
    False: "CREATE TABLE events (run_id TEXT, seq INTEGER, type TEXT, step_path TEXT, "
           "payload TEXT, at REAL, hash TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID",
}
INSERT = {
    True: "INSERT INTO events VALUES (? + 7 * 4294967296, ?, ?, 'StepCompleted', 's', ?, "
          "1.5, ?)",
    False: "INSERT INTO events VALUES (?, ?, 'StepCompleted', 's', ?, 1.5, ?)",
}
HASH = "v2:" + "a" * 64
DEFAULT_PAGE = 4096  # SQLite's default page size: issue 32's floor
SMALL_PAGE = 1024  # lwtool.world.local_store.PAGE_SIZE (not imported: no lwtool code here)


def per_commit(folder: Path, layout: str, synchronous: str, commits: int,
               checkpoint: int = 0, gap_us: float = 0,
               page_size: int = DEFAULT_PAGE) -> tuple[float, float]:
    """(microseconds per step-boundary commit, WAL frames per commit). `checkpoint`:
    WAL pages between checkpoints (0: none, so the frames can be counted; nan then).
    `gap_us`: CPU work (a spin) before each transaction, as a step's own work comes
    between its commits; not counted in the figure."""
    keyed = layout != UNKEYED
    path = folder / f"{layout.replace(' ', '-')}-{synchronous}-{gap_us:g}-{page_size}.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size={page_size}")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(f"PRAGMA wal_autocheckpoint={checkpoint}")  # 0: frames from the WAL's size
    db.executescript(SCHEMA + EVENTS[keyed])
    seq = 0
    spun = 0.0
    started = time.perf_counter()
    for n in range(commits):
        if gap_us:
            spun += spin(gap_us)
        db.execute("BEGIN IMMEDIATE")
        if layout.startswith("one row"):  # keyed, the six payloads in one JSON array
            db.execute(INSERT[True], (seq + 1, RUN, seq + 1,
                                      json.dumps(["x" * size for size in SIZES]), HASH))
        else:
            rows = [(RUN, seq + k + 1, "x" * size, HASH) for k, size in enumerate(SIZES)]
            db.executemany(INSERT[keyed], [(r[1], *r) for r in rows] if keyed else rows)
        if layout.endswith("artifact row"):
            db.execute("INSERT INTO artifacts VALUES (?, ?)",
                       (hashlib.sha256(str(n).encode()).hexdigest(), b"y" * 60))
        seq += 6
        db.execute("UPDATE runs SET last_seq = ?, last_hash = 'h', updated_at = 1 "
                   "WHERE run_id = ?", (seq, RUN))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started - spun
    frames = os.path.getsize(f"{path}-wal") / (page_size + 24) / commits if not checkpoint \
        else float("nan")
    db.close()
    return elapsed / commits * 1e6, frames


def spin(micros: float) -> float:
    """Keep this CPU busy for `micros` microseconds; the seconds it took."""
    began = time.perf_counter()
    end = began + micros / 1e6
    now = began
    while now < end:
        now = time.perf_counter()
    return now - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where the databases go (default: a "
                        "temp dir; the disk decides FULL's figures)")
    args = parser.parse_args()
    # every layout in 4 KB pages, then what the local world writes in its own pages
    cases = [(layout, DEFAULT_PAGE, layout) for layout in LAYOUTS] + [
        (PACKED, SMALL_PAGE, f"{PACKED} in {SMALL_PAGE // 1024} KB pages")]
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        for synchronous in ("FULL", "NORMAL"):
            figures = []
            for layout, page_size, label in cases:
                rounds = []
                for round_ in range(args.rounds):
                    folder = Path(scratch) / f"{round_}"
                    folder.mkdir(exist_ok=True)
                    rounds.append(per_commit(folder, layout, synchronous, args.commits,
                                             page_size=page_size))
                micros = statistics.median(r[0] for r in rounds)
                frames = statistics.median(r[1] for r in rounds)
                figures.append(f"{label} {micros:.0f} us ({frames:.1f} pages)")
            print(f"synchronous={synchronous}: " + "; ".join(figures))


if __name__ == "__main__":
    main()

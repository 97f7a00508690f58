"""What the event store's row layout costs, in raw SQLite (no lwtool code): one commit
per step boundary of a trivial step, as the local world writes it (six event rows, the
inline output's artifact row, the run head), without the artifact row, and with the six
events packed in one row; each in synchronous FULL (strict) and NORMAL (process).

It answers whether changing the store's format (issue 13's remaining levers) could
bring a step near the raw one-row commit that bench/runtime.py compares against.

Run: .venv/bin/python bench/store_layout.py [--commits N] [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

LAYOUTS = ("six rows + artifact row", "six rows", "one row")
PAYLOAD = json.dumps({"stepId": "s", "uses": "tool.call", "visit": 0, "attempt": 1,
                      "envelope": {"output": {"value": "x" * 40},
                                   "outputRef": "artifact://sha256:" + "a" * 64,
                                   "artifacts": [], "metadata": {"uses": "tool.call"}}})
SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, last_seq INTEGER, last_hash TEXT,
                   updated_at REAL);
CREATE TABLE events (run_id TEXT, seq INTEGER, type TEXT, step_path TEXT, payload TEXT,
                     at REAL, hash TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
CREATE TABLE artifacts (ref TEXT PRIMARY KEY, data BLOB) WITHOUT ROWID;
INSERT INTO runs VALUES ('r', 0, '', 0);
"""
INSERT = "INSERT INTO events VALUES ('r', ?, 'StepCompleted', 's', ?, 0, 'h')"


def per_commit(folder: Path, layout: str, synchronous: str, commits: int) -> float:
    """Microseconds per step-boundary commit."""
    db = sqlite3.connect(folder / f"{layout.replace(' ', '-')}-{synchronous}.db",
                         isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.executescript(SCHEMA)
    seq = 0
    started = time.perf_counter()
    for n in range(commits):
        db.execute("BEGIN IMMEDIATE")
        if layout == "one row":
            db.execute(INSERT, (seq, json.dumps([PAYLOAD] * 6)))
        else:
            db.executemany(INSERT, [(seq + k, PAYLOAD) for k in range(6)])
        if layout == "six rows + artifact row":
            db.execute("INSERT INTO artifacts VALUES (?, ?)",
                       (hashlib.sha256(str(n).encode()).hexdigest(), PAYLOAD.encode()))
        seq += 6
        db.execute("UPDATE runs SET last_seq = ?, last_hash = 'h', updated_at = 1 "
                   "WHERE run_id = 'r'", (seq,))
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed / commits * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where the databases go (default: a "
                        "temp dir; the disk decides FULL's figures)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        for synchronous in ("FULL", "NORMAL"):
            figures = []
            for layout in LAYOUTS:
                rounds = []
                for round_ in range(args.rounds):
                    folder = Path(scratch) / f"{round_}"
                    folder.mkdir(exist_ok=True)
                    rounds.append(per_commit(folder, layout, synchronous, args.commits))
                figures.append(f"{layout} {statistics.median(rounds):.0f} us")
            print(f"synchronous={synchronous}: " + "; ".join(figures))


if __name__ == "__main__":
    main()

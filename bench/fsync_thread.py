"""Whether strict mode could hide its fsync behind the next step's work: a chain of
step-boundary commits (the six event rows, the artifact row and the head, as
`bench/store_layout.py` writes them) with Python work between them, its fsync made
three ways, per step:

- FULL commit: each commit at synchronous=FULL (what strict mode does);
- NORMAL commit + WAL fdatasync inline: then `os.fdatasync` of the -wal file on the
  same thread (the same durability as FULL: the figure should match FULL's);
- NORMAL commit + WAL fdatasync in a thread: its `fdatasync` handed to a worker thread
  while the loop does the next step's own work (its input, hashes, events: the part
  before the tool call, which must wait for the previous result to be durable), then
  the wait, then the rest of the step;
- NORMAL commit + WAL write started, fdatasync before the call (Linux): no thread; the
  commit's WAL pages are sent to the disk at once (`sync_file_range`, which returns
  without waiting for them), the next step's work up to its tool call runs meanwhile,
  then `os.fdatasync` waits for what is left (the device's cache flush at least).

The store is made as lwtool makes one (its page size, strict mode's WAL checkpoint).

The step's work is a spin of PRE + POST microseconds of Python (it holds the GIL, as a
step's work does). Pipelining pays off only where the thread's hand-off and the GIL's
are cheaper than the work it hides; the worker thread needs the GIL to start its
fdatasync, which the loop holds until it waits.

Run: .venv/bin/python bench/fsync_thread.py [--pre US] [--post US] [--commits N]
     [--rounds N] [--dir DIR]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from store_layout import EVENTS, INSERT, RUN, SCHEMA, SIZES, spin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lwtool.world.local_store import PAGE_SIZE, WAL_CHECKPOINT_PAGES  # noqa: E402

WAYS = ("FULL commit", "NORMAL commit + WAL fdatasync inline",
        "NORMAL commit + WAL fdatasync in a thread",
        "NORMAL commit + WAL write started, fdatasync before the call")
STARTS: list[float] = []  # seconds each sync_file_range took (the last way's)
SYNC_FILE_RANGE_WRITE = 2  # start writing the range's dirty pages; do not wait


def start_write() -> Callable[[int], object] | None:
    """`sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)` through libc, or None where
    there is none (not Linux)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        call = libc.sync_file_range
    except (OSError, AttributeError, TypeError):
        return None
    call.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    return lambda fd: call(fd, 0, 0, SYNC_FILE_RANGE_WRITE)


BEGIN_WRITE = start_write()  # libc looked up once; None: the fourth way is left out


def per_step(folder: Path, way: str, pre: float, post: float, commits: int) -> float:
    """Microseconds per step (work and commit) of a chain made `way`."""
    path = folder / f"{WAYS.index(way)}.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # as lwtool makes a store
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES['FULL']}")
    db.execute(f"PRAGMA synchronous={'FULL' if way == WAYS[0] else 'NORMAL'}")
    db.executescript(SCHEMA + EVENTS[True])
    wal = os.open(f"{path}-wal", os.O_RDONLY)
    pending: Future[None] | None = None
    unsynced = False
    seq = 0
    with ThreadPoolExecutor(1) as thread:
        started = time.perf_counter()
        for n in range(commits):
            spin(pre)  # the step's own work up to its tool call
            if pending is not None:
                pending.result()  # the previous result is durable before the call
            if unsynced:
                os.fdatasync(wal)
                unsynced = False
            spin(post)  # the call, the output, the closing events
            db.execute("BEGIN IMMEDIATE")
            db.executemany(INSERT[True], [(seq + k + 1, RUN, seq + k + 1, "x" * size,
                                           f"h{n}") for k, size in enumerate(SIZES)])
            db.execute("INSERT INTO artifacts VALUES (?, ?)", (f"a{n}", b"y" * 60))
            seq += len(SIZES)
            db.execute("UPDATE runs SET last_seq = ? WHERE run_id = ?", (seq, RUN))
            db.execute("COMMIT")
            if way == WAYS[1]:
                os.fdatasync(wal)
            elif way == WAYS[2]:
                pending = thread.submit(os.fdatasync, wal)
            elif way == WAYS[3] and BEGIN_WRITE is not None:
                began = time.perf_counter()
                BEGIN_WRITE(wal)
                STARTS.append(time.perf_counter() - began)
                unsynced = True
        if pending is not None:
            pending.result()
        if unsynced:
            os.fdatasync(wal)
        elapsed = time.perf_counter() - started
    os.close(wal)
    db.close()
    return elapsed / commits * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pre", type=float, default=40.0,
                        help="microseconds of a step's work before its tool call")
    parser.add_argument("--post", type=float, default=40.0,
                        help="microseconds of a step's work from its tool call on")
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where the databases go (default: a "
                        "temp dir; the disk decides the figures)")
    args = parser.parse_args()
    ways = WAYS if BEGIN_WRITE is not None else WAYS[:3]
    figures: dict[str, list[float]] = {way: [] for way in ways}
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        for round_ in range(args.rounds):  # the ways alternate within each round
            for way in ways:
                folder = Path(scratch) / f"{round_}-{WAYS.index(way)}"
                folder.mkdir()
                figures[way].append(per_step(folder, way, args.pre, args.post,
                                             args.commits))
    print(f"a chain step with {args.pre:g} + {args.post:g} us of work, per step (medians "
          f"of {args.rounds}): " + "; ".join(
              f"{way} {statistics.median(values):.0f} us"
              for way, values in figures.items()))
    if STARTS:
        print(f"starting the write (sync_file_range) took {statistics.median(STARTS) * 1e6:.0f} "
              "us itself (median), paid before the next step's work; the work here is a "
              "timed spin, which does not slow down after the syscall as a step's Python "
              "does (what lwtool's own chain gained with it: docs/performance.md, twelfth pass)")


if __name__ == "__main__":
    main()

"""Loaded by `bench/postgres.py --only costs` into worker processes (PYTHONPATH): every
psycopg connection writes libpq's protocol trace to $LWTOOL_BENCH_TRACE_DIR, so the
benchmark counts the round trips a worker makes (a `Query` or a `Sync` the client
sends is one: the client then waits for the server's answer)."""

import os

_folder = os.environ.get("LWTOOL_BENCH_TRACE_DIR")
if _folder:
    import itertools

    import psycopg

    _numbers = itertools.count()
    _files = []  # kept open while the process lives
    _connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]

    def _traced(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        conn = _connect(cls, *args, **kwargs)
        out = open(os.path.join(_folder, f"{os.getpid()}-{next(_numbers)}.trace"), "w")
        _files.append(out)
        conn.pgconn.trace(out.fileno())
        conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        return conn

    psycopg.Connection.connect = classmethod(_traced)  # type: ignore[method-assign]

"""One round trip a commit. A transaction the usual way costs a round trip for BEGIN, one
a statement and one for COMMIT: five or six for a step's commit. Here a commit is one
statement on an autocommit connection (its own transaction): what it writes is chained
in data-modifying CTEs, so psycopg prepares it like any statement it sees often (no
planning a commit). Process durability takes a connection whose session commits with
`synchronous_commit` off (`PostgresWorld._relaxed`). What needs two statements in one
transaction (a claim on a limited queue: lock the limits, then count) goes as one
simple Query of both, bound on the client (`script`): the server runs it as one
implicit transaction, still one round trip.

An append moves the run's head and inserts the events in one statement, only where the
head is still the one it knows: the one this process committed last
(`PostgresWorld._heads`, no round trip), else the one it reads first. The UPDATE takes
the run row's lock (a second appender waits, then finds the head moved and inserts
nothing); the caller then reads the head again, and after a few misses appends the
locking way. Artifacts go in the same statement (content-addressed: a second copy is
no change)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwtool.world.postgres_keys import CHUNK

Statement = tuple[str, Sequence[Any]]

_EVENT_COLUMNS = "(run_id, seq, type, step_path, payload, at, hash)"


def script(conn: Any, statements: Sequence[Statement]) -> list[Any]:
    """Run `statements` on `conn` (autocommit) as one implicit transaction in one round
    trip; the rows of the last one (none when it returns none)."""
    import psycopg

    cursor = psycopg.ClientCursor(conn)
    cursor.execute("; ".join(cursor.mogrify(sql, args) for sql, args in statements))
    while cursor.nextset():
        pass
    return rows_of(cursor)


def rows_of(cursor: Any) -> list[Any]:
    """The rows a statement returned (none for one that returns none), without asking
    `cursor.description`, which builds a Column for each field on every call."""
    from psycopg.pq import ExecStatus

    result = cursor.pgresult
    return cursor.fetchall() if result is not None and \
        result.status == ExecStatus.TUPLES_OK else []


def _artifacts(artifacts: Sequence[tuple[str, bytes]]) -> tuple[list[str], list[Any]]:
    """CTEs that store each (ref, data) where it is not stored yet (its row, its
    chunks), and their arguments."""
    ctes: list[str] = []
    args: list[Any] = []
    for number, (ref, data) in enumerate(artifacts):
        chunks = [(ref, n, data[start:start + CHUNK]) for n, start in
                  enumerate(range(0, max(len(data), 1), CHUNK))]
        ctes.append(f"a{number} AS (INSERT INTO lwtool.artifacts VALUES (%s, %s) ON CONFLICT "
                    "DO NOTHING)")
        ctes.append(f"c{number} AS (INSERT INTO lwtool.artifact_chunks VALUES "
                    f"{', '.join(['(%s, %s, %s)'] * len(chunks))} ON CONFLICT DO NOTHING)")
        args += [ref, len(data), *(value for chunk in chunks for value in chunk)]
    return ctes, args


def _values(rows: Sequence[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """A VALUES list of event rows and its arguments."""
    return (", ".join(["(%s, %s, %s, %s, %s, %s::double precision, %s)"] * len(rows)),
            [value for row in rows for value in row])


def create(run_id: str, version_id: str, now: float, input_text: str, options_text: str,
           rows: Sequence[tuple[Any, ...]], head: tuple[int, str]) -> Statement:
    """A new run's row, at its chain's head already, and its first events."""
    run = ("INSERT INTO lwtool.runs (run_id, version_id, status, created_at, updated_at, "
           "input, options, last_seq, last_hash) VALUES (%s, %s, 'running', %s, %s, %s, %s, "
           "%s, %s)")
    args: list[Any] = [run_id, version_id, now, now, input_text, options_text, *head]
    if not rows:
        return run, args
    values, more = _values(rows)
    return (f"WITH run AS ({run}) INSERT INTO lwtool.events {_EVENT_COLUMNS} VALUES "
            f"{values}", [*args, *more])


def append_at(run_id: str, known: tuple[int, str], rows: Sequence[tuple[Any, ...]],
              head: tuple[int, str], status: str | None, now: float,
              when_status: str | None = None,
              artifacts: Sequence[tuple[str, bytes]] = ()) -> Statement:
    """Store `artifacts`, move the run's head from `known` to `head` and insert `rows`,
    only where the head is still `known` (and the status `when_status`, when given):
    returns a row per event inserted (one, with no events), none when the head had
    moved."""
    ctes, args = _artifacts(artifacts)
    ctes.append("head AS (UPDATE lwtool.runs SET last_seq = %s, last_hash = %s, updated_at "
                "= %s, status = coalesce(%s, status) WHERE run_id = %s AND last_seq = %s AND "
                "last_hash = %s AND status = coalesce(%s, status) RETURNING run_id)")
    args += [head[0], head[1], now, status, run_id, known[0], known[1], when_status]
    if not rows:
        return f"WITH {', '.join(ctes)} SELECT run_id FROM head", args
    values, more = _values(rows)
    return (f"WITH {', '.join(ctes)} INSERT INTO lwtool.events {_EVENT_COLUMNS} SELECT v.* "
            f"FROM (VALUES {values}) AS v {_EVENT_COLUMNS} WHERE EXISTS (SELECT FROM head) "
            "RETURNING seq", [*args, *more])

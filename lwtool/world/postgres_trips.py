"""One round trip a commit: the statements of a PostgreSQL world's write, bound on the
client (psycopg's ClientCursor) and sent as one simple Query, which the server runs as
one implicit transaction (all of it or, on an error, none). A transaction the usual
way costs a round trip for BEGIN, one a statement and one for COMMIT: five or six for
a step's commit. Here a step's commit is one (bench/postgres.py `--only costs`).

An append moves the run's head and inserts the events in one statement, only where the
head is still the one it knows: the one this process committed last
(`PostgresWorld._heads`, no round trip), else the one it reads first. The UPDATE takes
the run row's lock (a second appender waits, then finds the head moved and inserts
nothing); the caller then reads the head again, and after a few misses appends the
locking way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwtool.world.postgres_inspected import CHUNK

Statement = tuple[str, Sequence[Any]]

_EVENT_COLUMNS = "(run_id, seq, type, step_path, payload, at, hash)"


def script(conn: Any, statements: Sequence[Statement], durable: bool) -> list[Any]:
    """Run `statements` on `conn` (autocommit) as one implicit transaction in one round
    trip; the rows of the last one (none when it returns none). Process durability
    commits with `synchronous_commit` off, for this transaction only."""
    import psycopg

    cursor = psycopg.ClientCursor(conn)
    parts = [] if durable else ["SET LOCAL synchronous_commit = off"]
    parts += [cursor.mogrify(sql, args) for sql, args in statements]
    cursor.execute("; ".join(parts))
    while cursor.nextset():
        pass
    return cursor.fetchall() if cursor.description else []


def artifact_puts(artifacts: Sequence[tuple[str, bytes]]) -> list[Statement]:
    """Store each (ref, data) where it is not stored yet: its row and its chunks."""
    out: list[Statement] = []
    for ref, data in artifacts:
        out.append(("INSERT INTO lwtool.artifacts VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (ref, len(data))))
        chunks = [(ref, n, data[start:start + CHUNK]) for n, start in
                  enumerate(range(0, max(len(data), 1), CHUNK))]
        out.append((f"INSERT INTO lwtool.artifact_chunks VALUES "
                    f"{', '.join(['(%s, %s, %s)'] * len(chunks))} ON CONFLICT DO NOTHING",
                    [value for chunk in chunks for value in chunk]))
    return out


def _values(rows: Sequence[tuple[Any, ...]]) -> tuple[str, list[Any]]:
    """A VALUES list of event rows and its arguments."""
    return (", ".join(["(%s, %s, %s, %s, %s, %s::double precision, %s)"] * len(rows)),
            [value for row in rows for value in row])


def create(run_id: str, version_id: str, now: float, input_text: str, options_text: str,
           rows: Sequence[tuple[Any, ...]], head: tuple[int, str]) -> list[Statement]:
    """A new run's row, at its chain's head already, and its first events."""
    out: list[Statement] = [(
        "INSERT INTO lwtool.runs (run_id, version_id, status, created_at, updated_at, input, "
        "options, last_seq, last_hash) VALUES (%s, %s, 'running', %s, %s, %s, %s, %s, %s)",
        (run_id, version_id, now, now, input_text, options_text, head[0], head[1]))]
    if rows:
        values, args = _values(rows)
        out.append((f"INSERT INTO lwtool.events {_EVENT_COLUMNS} VALUES {values}", args))
    return out


def append_at(run_id: str, known: tuple[int, str], rows: Sequence[tuple[Any, ...]],
              head: tuple[int, str], status: str | None, now: float,
              when_status: str | None = None) -> Statement:
    """Move the run's head from `known` to `head` and insert `rows`, only where the head
    is still `known` (and the status `when_status`, when given): returns a row per
    event inserted (one, with no events), none when the head had moved."""
    move = ("UPDATE lwtool.runs SET last_seq = %s, last_hash = %s, updated_at = %s, status = "
            "coalesce(%s, status) WHERE run_id = %s AND last_seq = %s AND last_hash = %s "
            "AND status = coalesce(%s, status) RETURNING run_id")
    moved = [head[0], head[1], now, status, run_id, known[0], known[1], when_status]
    if not rows:
        return move, moved
    values, args = _values(rows)
    return (f"WITH head AS ({move}) INSERT INTO lwtool.events {_EVENT_COLUMNS} SELECT v.* "
            f"FROM (VALUES {values}) AS v {_EVENT_COLUMNS} WHERE EXISTS (SELECT FROM head) "
            "RETURNING seq", [*moved, *args])

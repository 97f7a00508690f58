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
nothing, and answers with the head it found instead); the caller tries that head
next, and after a few misses appends the locking way. Artifacts go in the same
statement (content-addressed: a second copy is no change). Rows go as JSON
(`json_to_recordset`): a statement's text does not depend on how many events and
artifacts it writes. A run's final commit may end its worker's queue claim too
(`claim`, postgres_queue.ENDED_WITH_RUN)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from json import dumps
from typing import Any

from lwtool.world.postgres_keys import CHUNK
from lwtool.world.postgres_queue import ENDED_WITH_RUN

Statement = tuple[str, Sequence[Any] | Mapping[str, Any]]

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


# A commit's rows go as one JSON text each of events and artifacts (json_to_recordset):
# its statement's text is the same for any number of them, so psycopg converts it once
# (its query cache) and prepares it on the server, and the rows cost the client one
# json.dumps, not a parameter (or an array element) each.
_STORE = (
    "a AS (INSERT INTO lwtool.artifacts SELECT ref, size FROM json_to_recordset("
    "%(artifacts)s::json) AS a(ref text, size bigint) ON CONFLICT DO NOTHING), "
    "c AS (INSERT INTO lwtool.artifact_chunks SELECT ref, n, decode(data, 'hex') FROM "
    "json_to_recordset(%(chunks)s::json) AS c(ref text, n integer, data text) ON CONFLICT "
    "DO NOTHING)")
_HEAD = (
    "head AS (UPDATE lwtool.runs SET last_seq = %(seq)s, last_hash = %(hash)s, updated_at = "
    "%(now)s, status = coalesce(%(status)s, status) WHERE run_id = %(run)s AND last_seq = "
    "%(known_seq)s AND last_hash = %(known_hash)s AND status = coalesce(%(when)s, status) "
    "RETURNING run_id)")
_EVENTS = (
    f"INSERT INTO lwtool.events {_EVENT_COLUMNS} SELECT %(run)s, v.seq, v.type, v.path, "
    "v.payload, %(now)s::double precision, v.hash FROM json_to_recordset(%(events)s::json) "
    "AS v(seq bigint, type text, path text, payload text, hash text)")
_CREATE = (
    "WITH run AS (INSERT INTO lwtool.runs (run_id, version_id, status, created_at, "
    "updated_at, input, options, last_seq, last_hash) VALUES (%(run)s, %(version)s, "
    "'running', %(now)s, %(now)s, %(input)s, %(options)s, %(seq)s, %(hash)s)) " + _EVENTS)
# Each returns (seq, claim ended, NULL, NULL, NULL) a row written, or, when the head had
# moved (nothing written), one row (NULL, NULL, last_seq, last_hash, status): the head as
# the statement saw it, so the next try needs no read of its own
_MISSED = ("UNION ALL SELECT NULL, NULL, r.last_seq, r.last_hash, r.status FROM lwtool.runs r "
           "WHERE r.run_id = %(run)s AND NOT EXISTS (SELECT FROM head)")
_APPEND = (f"WITH {_STORE}, {_HEAD}, ins AS ({_EVENTS} WHERE EXISTS (SELECT FROM head) "
           "RETURNING seq) SELECT seq, 0::bigint, NULL::bigint, NULL::text, NULL::text FROM "
           f"ins {_MISSED}")
_MOVE = (f"WITH {_STORE}, {_HEAD} SELECT 0::bigint, 0::bigint, NULL::bigint, NULL::text, "
         f"NULL::text FROM head {_MISSED}")
# the same, ending the run's queue claim too: each row says whether it did
_APPEND_ENDING = (f"WITH {_STORE}, {_HEAD}, {ENDED_WITH_RUN}, ins AS ({_EVENTS} WHERE EXISTS "
                  "(SELECT FROM head) RETURNING seq) SELECT seq, (SELECT count(*) FROM told), "
                  f"NULL::bigint, NULL::text, NULL::text FROM ins {_MISSED}")
_MOVE_ENDING = (f"WITH {_STORE}, {_HEAD}, {ENDED_WITH_RUN} SELECT 0::bigint, (SELECT count(*) "
                f"FROM told), NULL::bigint, NULL::text, NULL::text FROM head {_MISSED}")


def _events(rows: Sequence[tuple[Any, ...]]) -> str:
    """The JSON of event rows ((run_id, seq, type, path, payload, at, hash) each)."""
    return dumps([{"seq": r[1], "type": r[2], "path": r[3], "payload": r[4], "hash": r[6]}
                  for r in rows], ensure_ascii=False, separators=(",", ":"))


def _artifacts(artifacts: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    """The JSON that stores each (ref, data): its row, and its chunks' (hex)."""
    if not artifacts:
        return {"artifacts": "[]", "chunks": "[]"}
    return {"artifacts": dumps([{"ref": ref, "size": len(data)} for ref, data in artifacts]),
            "chunks": dumps([{"ref": ref, "n": n, "data": data[start:start + CHUNK].hex()}
                             for ref, data in artifacts
                             for n, start in enumerate(range(0, max(len(data), 1), CHUNK))])}


def create(run_id: str, version_id: str, now: float, input_text: str, options_text: str,
           rows: Sequence[tuple[Any, ...]], head: tuple[int, str]) -> Statement:
    """A new run's row, at its chain's head already, and its first events."""
    return _CREATE, {"run": run_id, "version": version_id, "now": now, "input": input_text,
                     "options": options_text, "seq": head[0], "hash": head[1],
                     "events": _events(rows)}


def append_at(run_id: str, known: tuple[int, str], rows: Sequence[tuple[Any, ...]],
              head: tuple[int, str], status: str | None, now: float,
              when_status: str | None = None,
              artifacts: Sequence[tuple[str, bytes]] = (),
              claim: tuple[str, str] | None = None) -> Statement:
    """Store `artifacts`, move the run's head from `known` to `head` and insert `rows`,
    only where the head is still `known` (and the status `when_status`, when given):
    returns a row per event inserted (one, with no events), or when the head had moved
    one row whose first field is NULL and whose last three are the run's head and
    status (none for a run that does not exist). `claim` (worker, queue state): that
    worker's claim of the run ended with it, each row's second field 1 when it was."""
    args = {"run": run_id, "seq": head[0], "hash": head[1], "now": now, "status": status,
            "known_seq": known[0], "known_hash": known[1], "when": when_status,
            **_artifacts(artifacts)}
    if claim is not None:
        args.update(claim_worker=claim[0], claim_state=claim[1])
    if not rows:
        return (_MOVE if claim is None else _MOVE_ENDING), args
    return (_APPEND if claim is None else _APPEND_ENDING), {**args, "events": _events(rows)}

"""Read-only views of a local world for the web inspector (the InspectedWorld protocol
of lwtool.world.base): a filtered page of runs, the model replies of some runs (their
cost), a run's head, a slice of an artifact. Each is one short query, so a store of
many runs lists as fast as a store of few.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from lwtool.world import rows as rows_shape
from lwtool.world.base import RunRecord, StoreDamaged
from lwtool.world.files import open_regular
from lwtool.world.local_events import EVENT_COLUMNS, holding, payloads_by_run
from lwtool.world.rows import checked

REPLY = "harness.model.responded"

_LIST_COLUMNS = "run_id, version_id, status, created_at, updated_at"


class InspectorViews:
    """Mixed into LocalWorld (`_read`, `_events_of_run`, `_artifact_file` and
    `_artifact_errors` are its own)."""

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _events_of_run(self) -> tuple[str, str]:
        raise NotImplementedError

    def _artifact_file(self, digest: str) -> Path:
        raise NotImplementedError

    def _artifact_errors(self, ref: str, path: Path) -> AbstractContextManager[None]:
        raise NotImplementedError

    def runs_page(self, status: str | None, text: str | None, offset: int, limit: int
                  ) -> tuple[int, list[RunRecord]]:
        """(runs matching, the page of them, newest first), without their input and
        options (a run whose stored input is damaged still lists). `text` matches a
        part of the run id or the version id."""
        where, args = _run_filter(status, text)
        total = self._read(f"SELECT count(*) FROM runs {where}", args)[0][0]
        rows = self._read(f"SELECT {_LIST_COLUMNS} FROM runs {where} ORDER BY created_at "
                          "DESC, run_id DESC LIMIT ? OFFSET ?", (*args, limit, offset))
        return int(total), [RunRecord(row[0], row[1], row[2], row[3], row[4], None, {})
                            for row in checked(rows, rows_shape.RUN[:5], "a run row")]

    def status_counts(self) -> dict[str, int]:
        return {str(status): int(n) for status, n in
                self._read("SELECT status, count(*) FROM runs GROUP BY status")}

    def model_replies(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """run id -> the payload of each of its harness.model.responded events, read
        once (a packed row's replies out of their row)."""
        if not run_ids:
            return {}
        marks = ",".join("?" * len(run_ids))
        source, run = self._events_of_run()
        condition, args = holding([REPLY])
        rows = self._read(f"SELECT {run}, {EVENT_COLUMNS} {source} IN ({marks}) AND "
                          f"{condition} ORDER BY e.seq", (*run_ids, *args))
        return payloads_by_run(rows, [REPLY])

    def run_head(self, run_id: str) -> tuple[int, str] | None:
        """(last committed seq, status) of a run, or None: what a live view polls."""
        rows = self._read("SELECT last_seq, status FROM runs WHERE run_id = ?", (run_id,))
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def artifact_slice(self, ref: str, offset: int, length: int) -> tuple[bytes, int, bool]:
        """(up to `length` bytes of an artifact from `offset`, its size, whether it was
        read whole and matched its content address). Large artifacts are read a page
        at a time, never loaded whole."""
        digest = ref.removeprefix("artifact://sha256:")
        rows = self._read("SELECT substr(data, ?, ?), length(data) FROM artifacts "
                          "WHERE ref = ?", (offset + 1, length, ref))
        if rows:
            part, size = rows[0]
            if not isinstance(part, bytes):
                raise StoreDamaged(f"artifact {ref} is damaged: it holds no bytes")
            return part, int(size), _whole_and_sound(part, offset, int(size), digest, ref)
        path = self._artifact_file(digest)
        with self._artifact_errors(ref, path):
            fd = open_regular(path)
            try:
                size = os.fstat(fd).st_size
                part = os.pread(fd, length, offset)
            finally:
                os.close(fd)
        return part, size, _whole_and_sound(part, offset, size, digest, ref)


def _whole_and_sound(part: bytes, offset: int, size: int, digest: str, ref: str) -> bool:
    if offset or len(part) != size:
        return False
    if hashlib.sha256(part).hexdigest() != digest:
        raise StoreDamaged(f"artifact {ref} is damaged (its content does not match its hash)")
    return True


def _run_filter(status: str | None, text: str | None) -> tuple[str, tuple[Any, ...]]:
    clauses: list[str] = []
    args: list[Any] = []
    if status:
        clauses.append("status = ?")
        args.append(status)
    if text:
        clauses.append("(instr(run_id, ?) > 0 OR instr(version_id, ?) > 0)")
        args.extend([text, text])
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(args)

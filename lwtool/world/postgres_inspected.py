"""What the inspector and `lwtool runs` read of a PostgreSQL world (the InspectedWorld
protocol's part beyond the World's): a page of runs, counts by status, model replies,
whether a run is executing, a run's head, a slice of an artifact. A mixin of
lwtool.world.postgres.PostgresWorld (its `_read`, `_where`)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from lwtool.world.base import ArtifactMissing, RunRecord, StoreDamaged
from lwtool.world.local_events import payloads_by_run
from lwtool.world.postgres_keys import CHUNK, run_lock_key


class InspectedRows:
    _where: str

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def runs_page(self, status: str | None, text: str | None, offset: int, limit: int
                  ) -> tuple[int, list[RunRecord]]:
        clauses, args = [], []
        if status:
            clauses.append("status = %s")
            args.append(status)
        if text:
            clauses.append("(strpos(run_id, %s) > 0 OR strpos(version_id, %s) > 0)")
            args += [text, text]
        condition = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        total = self._read(f"SELECT count(*) FROM lwtool.runs {condition}", args)[0][0]
        rows = self._read("SELECT run_id, version_id, status, created_at, updated_at FROM "
                          f"lwtool.runs {condition} ORDER BY created_at DESC, run_id DESC "
                          "LIMIT %s OFFSET %s", (*args, limit, offset))
        return int(total), [RunRecord(r[0], r[1], r[2], r[3], r[4], None, {}) for r in rows]

    def status_counts(self) -> dict[str, int]:
        return {str(s): int(n) for s, n in
                self._read("SELECT status, count(*) FROM lwtool.runs GROUP BY status")}

    def model_replies(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        if not run_ids:
            return {}
        return payloads_by_run(self._read(
            "SELECT run_id, seq, type, step_path, payload, at, hash FROM lwtool.events "
            "WHERE run_id = ANY(%s) AND type = 'harness.model.responded' ORDER BY seq",
            (list(run_ids),)))

    def executing(self, run_id: str) -> bool:
        """Whether a live session holds the run's advisory lock (the server drops it when
        the holder dies: a `running` run nobody holds was interrupted)."""
        key = run_lock_key(run_id) & 0xFFFFFFFFFFFFFFFF  # pg_locks shows it as two oids
        return bool(self._read(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s "
            "AND objid = %s AND objsubid = 1 AND database = (SELECT oid FROM pg_database "
            "WHERE datname = current_database())", (key >> 32, key & 0xFFFFFFFF)))

    def run_head(self, run_id: str) -> tuple[int, str] | None:
        rows = self._read("SELECT last_seq, status FROM lwtool.runs WHERE run_id = %s",
                          (run_id,))
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def artifact_slice(self, ref: str, offset: int, length: int) -> tuple[bytes, int, bool]:
        size_rows = self._read("SELECT size FROM lwtool.artifacts WHERE ref = %s", (ref,))
        if not size_rows:
            raise ArtifactMissing(f"artifact {ref} is missing from {self._where}")
        size = int(size_rows[0][0])
        first, last = offset // CHUNK, (offset + max(length, 1) - 1) // CHUNK
        rows = self._read("SELECT data FROM lwtool.artifact_chunks WHERE ref = %s AND n "
                          "BETWEEN %s AND %s ORDER BY n", (ref, first, last))
        joined = b"".join(bytes(r[0]) for r in rows)
        part = joined[offset - first * CHUNK:][:length]
        whole = offset == 0 and len(part) == size
        if whole and hashlib.sha256(part).hexdigest() != ref.removeprefix("artifact://sha256:"):
            raise StoreDamaged(f"artifact {ref} is damaged (its content does not match its "
                               "hash)")
        return part, size, whole

"""A local world's WorkflowVersions and their records (lwtool.lock.version_record): the
`versions` and `version_meta` tables of its SQLite store. A mixin of
lwtool.world.local.LocalWorld (its `_read`, `_tx`, `_db_path`, `_has_meta`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lwtool.world import rows as rows_shape
from lwtool.world.rows import checked
from lwtool.world.versions import intact_version, version_record


class LocalVersions:
    _db_path: Path
    _has_meta: bool

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _tx(self, durable: bool = True) -> Any:
        raise NotImplementedError

    def register_version(self, version_id: str, lwir: dict[str, Any],
                         durable: bool = True, canonical: str | None = None,
                         meta: Callable[[], Mapping[str, Any]] | None = None) -> None:
        """Store a version under the id its caller computed (not hashed again here: that
        doubled a run's start-up cost); `get_version` verifies it on every read. Stored
        in its RFC 8785 form (`canonical`, when the caller has it from computing the
        id), so that check is one SHA-256 of the text. `meta` makes the version's record
        (lwtool.lock.version_record), called only when the version has none yet: the
        first registrar's record stays. A version already stored (with its record, when
        `meta` is given) costs one read, no commit."""
        from lwtool.canonical.jcs import canonical_text

        table = "version_meta" if meta is not None else "versions"
        if self._read(f"SELECT 1 FROM {table} WHERE version_id = ?", (version_id,)):
            return
        text = canonical if canonical is not None else canonical_text(lwir)
        record = None if meta is None else canonical_text(dict(meta()))
        with self._tx(durable) as db:
            db.execute("INSERT OR IGNORE INTO versions VALUES (?, ?)", (version_id, text))
            if record is not None:
                db.execute("INSERT OR IGNORE INTO version_meta VALUES (?, ?)",
                           (version_id, record))

    def get_version(self, version_id: str) -> dict[str, Any] | None:
        """The stored LWIR, verified against its id (a WorkflowVersion is immutable)."""
        rows = self._read("SELECT lwir FROM versions WHERE version_id = ?", (version_id,))
        if not rows:
            return None
        return intact_version(rows[0][0], version_id, str(self._db_path))

    def version_meta(self, version_id: str) -> dict[str, Any] | None:
        """The record a version was first registered with; None for a version registered
        without one (or before versions kept one)."""
        if not self._has_meta:
            return None
        rows = self._read("SELECT meta FROM version_meta WHERE version_id = ?", (version_id,))
        return version_record(rows[0][0], version_id, str(self._db_path)) if rows else None

    def version_ids(self) -> list[str]:
        rows = self._read("SELECT version_id FROM versions ORDER BY version_id")
        return [r[0] for r in checked(rows, rows_shape.ONE_TEXT, f"the versions table of "
                                      f"{self._db_path}")]

"""A PostgreSQL world's WorkflowVersions and their records (lwtool.lock.version_record):
the tables `lwtool.versions` and `lwtool.version_meta` (schema 7). A process keeps
the ids it stored, the texts it read and checked, and the records it read (at most
KEPT of each: both never change once written; a worker reads a version's record before
each queued run it starts). A mixin of
lwtool.world.postgres.PostgresWorld (its `_read`, `_one_trip`, `_where`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from lwtool.canonical.compact import loads
from lwtool.world.versions import intact_version, version_record

KEPT = 4096  # versions and run heads a process keeps in memory at most


class VersionRows:
    _where: str
    _versions: set[str]
    _version_texts: dict[str, str]
    _version_records: dict[str, str]

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _one_trip(self, statements: Sequence[Any], durable: bool = True,
                  before: Callable[[], None] | None = None) -> list[Any]:
        raise NotImplementedError

    def register_version(self, version_id: str, lwir: dict[str, Any],
                         durable: bool = True, canonical: str | None = None,
                         meta: Callable[[], Mapping[str, Any]] | None = None) -> None:
        """As the local world's (lwtool.world.local_versions): `meta` is called only when
        the version has no record yet, and the first record stays."""
        from lwtool.canonical.jcs import canonical_text

        key = version_id if meta is None else f"{version_id}+meta"
        table = "lwtool.versions" if meta is None else "lwtool.version_meta"
        if key in self._versions or self._read(
                f"SELECT 1 FROM {table} WHERE version_id = %s", (version_id,)):
            self._versions.add(key)
            return
        text = canonical if canonical is not None else canonical_text(lwir)
        statements = [("INSERT INTO lwtool.versions VALUES (%s, %s) ON CONFLICT DO NOTHING",
                       (version_id, text))]
        if meta is not None:
            statements.append(("INSERT INTO lwtool.version_meta VALUES (%s, %s) "
                               "ON CONFLICT DO NOTHING",
                               (version_id, canonical_text(dict(meta())))))
        self._one_trip(statements, durable)
        self._versions.update({version_id, key})

    def get_version(self, version_id: str) -> dict[str, Any] | None:
        text = self._version_texts.get(version_id)  # read and checked before
        if text is not None:
            return loads(text)  # type: ignore[no-any-return]
        rows = self._read("SELECT lwir FROM lwtool.versions WHERE version_id = %s",
                          (version_id,))
        if not rows:
            return None
        lwir = intact_version(rows[0][0], version_id, self._where)
        if len(self._version_texts) < KEPT:
            self._version_texts[version_id] = rows[0][0]
        return lwir

    def version_meta(self, version_id: str) -> dict[str, Any] | None:
        text = self._version_records.get(version_id)  # read and checked before
        if text is None:
            rows = self._read("SELECT meta FROM lwtool.version_meta WHERE version_id = %s",
                              (version_id,))
            if not rows:
                return None  # not kept: a registrar may write the record later
            text = rows[0][0]
        record = version_record(text, version_id, self._where)
        if len(self._version_records) < KEPT:
            self._version_records[version_id] = text
        return record

    def version_ids(self) -> list[str]:
        return [r[0] for r in self._read("SELECT version_id FROM lwtool.versions "
                                         "ORDER BY version_id")]

"""What each column read back from the event store must hold.

SQLite keeps any value in any column, so a store someone edited can hand back a number
where a run id belongs, NULL for an LWIR, text for an artifact's bytes. Every query's
rows are checked here against their shape before anything uses them; a mismatch is
StoreDamaged naming what and where, never a TypeError deep in the runtime.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lwtool.world.base import StoreDamaged

TEXT: tuple[type, ...] = (str,)
OPTIONAL_TEXT: tuple[type, ...] = (str, type(None))
INTEGER: tuple[type, ...] = (int,)
TIME: tuple[type, ...] = (int, float)
BLOB: tuple[type, ...] = (bytes,)

Shape = Sequence[tuple[str, tuple[type, ...]]]

RUN: Shape = (("run_id", TEXT), ("version_id", TEXT), ("status", TEXT),
              ("created_at", TIME), ("updated_at", TIME), ("input", TEXT), ("options", TEXT))
HEAD: Shape = (("last_seq", INTEGER), ("last_hash", TEXT))
EVENT: Shape = (("seq", INTEGER), ("type", TEXT), ("step_path", OPTIONAL_TEXT),
                ("payload", TEXT), ("at", TIME))
CHAINED_EVENT: Shape = (*EVENT, ("hash", OPTIONAL_TEXT))
ONE_TEXT: Shape = (("value", TEXT),)
ONE_BLOB: Shape = (("data", BLOB),)


def checked(rows: list[Any], shape: Shape, where: str) -> list[Any]:
    """`rows` when every value has its column's type; else StoreDamaged naming `where`."""
    for row in rows:
        for value, (column, kinds) in zip(row, shape, strict=True):
            if not isinstance(value, kinds):
                held = "NULL" if value is None else type(value).__name__
                raise StoreDamaged(f"{where} is damaged: its {column} holds {held}")
    return rows

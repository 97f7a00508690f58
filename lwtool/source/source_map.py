"""JSON Pointer -> where that value (and its key) stand in the file.

Loaders record raw locations cheaply (YAML marks, JSON character offsets) and hand a
converter; `Span` objects are made only when somebody asks. A JSON file's map can even
be built lazily, on the first question, since valid files rarely need one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwtool.source import pointer as jp
from lwtool.source.position import FILE_START, Pos, Span

# (start, end, key_start, key_end, style): raw locations the converter understands;
# key_start is None when the value has no key; style is None for non-strings.
Entry = tuple[Any, Any, Any, Any, "str | None"]


@dataclass(frozen=True, slots=True)
class Located:
    """Where one value stands. `style` is the scalar style of a string: "" plain, "'" or
    '"' quoted, "|" or ">" block; None for collections and non-string scalars."""

    span: Span
    key_span: Span | None = None
    style: str | None = None


class SourceMap:
    """Spans for every pointer the loader saw; lookups of unseen pointers walk up."""

    def __init__(self, to_pos: Callable[[Any], tuple[int, int]],
                 build: Callable[[], dict[str, Entry]] | None = None) -> None:
        self._to_pos = to_pos
        self._build = build
        self._entries: dict[str, Entry] | None = None if build else {}

    @property
    def to_pos(self) -> Callable[[Any], tuple[int, int]]:
        """The converter from a raw location to a 1-based (line, column)."""
        return self._to_pos

    @property
    def entries(self) -> dict[str, Entry]:
        if self._entries is None:
            assert self._build is not None
            self._entries = self._build()
        return self._entries

    def _located(self, entry: Entry) -> Located:
        start, end, key_start, key_end, style = entry
        to_pos = self._to_pos
        span = Span(Pos(*to_pos(start)), Pos(*to_pos(end)))
        key = None
        if key_start is not None:
            key = Span(Pos(*to_pos(key_start)), Pos(*to_pos(key_end)))
        return Located(span, key, style)

    def get(self, pointer: str) -> Located | None:
        entry = self.entries.get(pointer)
        return self._located(entry) if entry else None

    def nearest(self, pointer: str) -> Located:
        """The entry for `pointer`, else for its nearest ancestor that has one."""
        entries = self.entries
        while True:
            entry = entries.get(pointer)
            if entry is not None:
                return self._located(entry)
            if not pointer:
                return Located(FILE_START)
            pointer = jp.parent(pointer)

    def span(self, pointer: str) -> Span:
        return self.nearest(pointer).span

    def key_span(self, pointer: str) -> Span:
        """The span of the key naming `pointer` (its value's span when there is no key)."""
        located = self.nearest(pointer)
        return located.key_span or located.span

    def __len__(self) -> int:
        return len(self.entries)

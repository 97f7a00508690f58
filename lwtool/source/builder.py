"""What the YAML and JSON builders share: the limits, the LoadFailed error, offsets to
line and column, duplicate-key findings and the source map they fill."""

from __future__ import annotations

import re
from bisect import bisect_right

from lwtool.source import pointer as jp
from lwtool.source.finding import Finding
from lwtool.source.position import FILE_START, Pos, Span
from lwtool.source.source_map import SourceMap

MAX_DEPTH = 256
MAX_NODES = 1_000_000  # values after alias expansion


class LoadFailed(Exception):
    """The file could not be turned into a JSON value; `findings` say where and why."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(findings[0].message if findings else "load failed")
        self.findings = findings


def fail(path: str, code: str, message: str, pos: Pos | None = None,
          pointer: str = "") -> LoadFailed:
    span = Span(pos, Pos(pos.line, pos.column + 1)) if pos else FILE_START
    return LoadFailed([Finding(code, message, path, pointer, span)])


def join(parent: str, key: str) -> str:
    if "~" in key or "/" in key:
        return jp.join(parent, key)
    return parent + "/" + key


class Offsets:
    """Character offset -> 1-based (line, column), with the line index built on demand."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts: list[int] | None = None

    def __call__(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


class Builder:
    """What both builders share: limits, duplicate-key findings, the source map."""

    def __init__(self, path: str, source_map: SourceMap) -> None:
        self.path = path
        self.nodes = 0
        self.source_map = source_map
        self.findings: list[Finding] = []

    def too_large(self, message: str, pos: Pos, pointer: str) -> LoadFailed:
        return fail(self.path, "parse.too_large", message, pos, pointer)

    def count(self, n: int, pos: Pos, pointer: str) -> None:
        """Add `n` expanded values (aliases count their whole subtree) and enforce the cap."""
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise self.too_large(f"the document expands to more than {MAX_NODES:,} values "
                                 "(an alias bomb or an oversized file)", pos, pointer)

    def check_depth(self, depth: int, pos: Pos, pointer: str) -> None:
        if depth > MAX_DEPTH:
            raise self.too_large(f"nesting is deeper than the {MAX_DEPTH}-level limit",
                                 pos, pointer)

    def duplicate(self, key: str, pointer: str, key_span: Span) -> None:
        """Record a duplicate key (the later value wins, as in JSON parsers)."""
        first = self.source_map.get(pointer)
        where = f" (first at line {first.key_span.start.line})" if first and first.key_span else ""
        self.findings.append(Finding("parse.duplicate_key", f"duplicate key '{key}'{where}",
                                     self.path, pointer, key_span))

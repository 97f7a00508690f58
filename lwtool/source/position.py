"""Positions inside a source file: 1-based lines and columns, always."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True, slots=True)
class Pos:
    """A 1-based line and column (columns count code points)."""

    line: int
    column: int

    def __post_init__(self) -> None:
        if self.line < 1 or self.column < 1:
            raise ValueError(f"positions are 1-based, got {self.line}:{self.column}")


@dataclass(frozen=True, order=True, slots=True)
class Span:
    """A range from `start` (inclusive) to `end` (exclusive)."""

    start: Pos
    end: Pos

    @classmethod
    def at(cls, line: int, column: int) -> Span:
        pos = Pos(line, column)
        return cls(pos, Pos(line, column + 1))


FILE_START = Span.at(1, 1)


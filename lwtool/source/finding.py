"""The one Finding type every stage reports with."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from lwtool.source.position import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem at a place: `path` (the file), `pointer` (RFC 6901) and `span` (1-based)."""

    code: str
    message: str
    path: str
    pointer: str
    span: Span
    severity: Severity = Severity.ERROR
    related: tuple[tuple[str, Span], ...] = field(default=())

    @property
    def line(self) -> int:
        return self.span.start.line

    @property
    def column(self) -> int:
        return self.span.start.column

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.code, self.message)

    def as_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "pointer": self.pointer,
            "line": self.line,
            "column": self.column,
            "endLine": self.span.end.line,
            "endColumn": self.span.end.column,
        }

    def as_text(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}"
        return f"{where}: {self.severity.value} {self.code} {self.message}"

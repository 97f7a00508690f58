"""Options shared by several commands."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"


class Durability(StrEnum):
    strict = "strict"
    process = "process"


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"

"""Options shared by several commands."""

from __future__ import annotations

from enum import Enum


class Format(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"

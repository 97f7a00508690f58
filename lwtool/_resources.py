"""The only code that finds grammar/ and schemas/ (in a checkout or an installed wheel)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent


@cache
def _root(kind: str) -> Path:
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"lwtool is installed without its {kind}/ folder")


def data_path(kind: str, name: str) -> Path:
    """A file shipped in lwtool/_data/<kind>/ (the code.run bootstrap, say)."""
    return _root(kind) / name


def grammar_path(name: str = "expr.lark") -> Path:
    return _root("grammar") / name


def schema_path(name: str) -> Path:
    return _root("schemas") / name


@cache
def load_schema(name: str) -> Any:
    """A JSON Schema file from schemas/ (parsed once per process; treat as read-only)."""
    return json.loads(schema_path(name).read_text(encoding="utf-8"))

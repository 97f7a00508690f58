"""Load a YAML or JSON file into plain JSON values plus a source map.

Approach: YAML goes through ruamel.yaml's C-backed event parser (libyaml) and an
iterative builder written here, so that positions are kept for every key and item,
nothing but plain JSON values is ever constructed (tags beyond the core schema, such as
`!!python/object`, are findings, never objects), aliases are budgeted (billion laughs)
and recursive aliases rejected, and nesting depth is bounded without recursion.
Rejected: ruamel's round-trip loader (keeps positions but ~1.6 s on a 1,000-step file)
and composing nodes then constructing (recursive: a 100,000-level file overflows the
stack). JSON goes through the standard library's own scanners, walked iteratively for
positions, with the same limits. Scalars are still parsed by ruamel (YAML 1.2 core
schema) and by `json` respectively.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwtool.source.builder import LoadFailed, fail
from lwtool.source.finding import Finding
from lwtool.source.json_builder import JsonBuilder
from lwtool.source.position import Pos
from lwtool.source.source_map import SourceMap
from lwtool.source.yaml_builder import YamlBuilder

__all__ = ["Document", "LoadFailed", "MAX_FILE_BYTES", "format_for", "load_bytes",
           "load_path", "load_text", "read_regular_file"]

MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(slots=True)
class Document:
    """A loaded file: its JSON value and where each part of it stands."""

    path: str
    text: str
    value: Any
    source_map: SourceMap
    format: str  # "yaml" or "json"
    findings: list[Finding] = field(default_factory=list)  # non-fatal (duplicate keys)


def load_path(path: str | Path) -> Document:
    """Read and load a file; raise LoadFailed (findings) or OSError (missing, unreadable)."""
    p = Path(path)
    with p.open("rb") as fh:
        data = fh.read(MAX_FILE_BYTES + 1)
    return load_bytes(data, str(path), fmt=format_for(p.name))


def read_regular_file(path: str | None) -> str | None:
    """A regular file's text (UTF-8, at most MAX_FILE_BYTES), or None for anything else:
    missing, unreadable, too large, not UTF-8, or not a regular file (a device such as
    /dev/zero, a FIFO, a socket: opened without blocking, checked before reading)."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        return data.decode("utf-8") if len(data) <= MAX_FILE_BYTES else None
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


def load_text(text: str, path: str = "<memory>", fmt: str | None = None) -> Document:
    return _load(text, path, fmt or format_for(path, text))


def load_bytes(data: bytes, path: str, fmt: str | None = None) -> Document:
    if len(data) > MAX_FILE_BYTES:
        raise fail(path, "parse.too_large",
                    f"the file is larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise fail(path, "parse.invalid",
                    "the file is binary (it contains a NUL byte), not YAML or JSON text",
                    _byte_pos(data, nul))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(path, "parse.invalid",
                    f"the file is not UTF-8 text (invalid byte 0x{data[exc.start]:02x})",
                    _byte_pos(data, exc.start)) from None
    return _load(text, path, fmt or format_for(path, text))


def format_for(name: str, text: str = "") -> str:
    lower = name.lower()
    if lower.endswith(".json"):
        return "json"
    if lower.endswith((".yaml", ".yml")):
        return "yaml"
    return "json" if text.lstrip()[:1] in ("{", "[") else "yaml"


def _byte_pos(data: bytes, offset: int) -> Pos:
    head = data[:offset]
    line_start = head.rfind(b"\n") + 1
    return Pos(head.count(b"\n") + 1, len(head[line_start:].decode("utf-8", "replace")) + 1)


def _load(text: str, path: str, fmt: str) -> Document:
    if not text.strip():
        raise fail(path, "parse.invalid", "the file is empty")
    builder = JsonBuilder(text, path) if fmt == "json" else YamlBuilder(text, path)
    value = builder.build()
    return Document(path, text, value, builder.source_map, fmt, builder.findings)

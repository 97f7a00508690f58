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

import copy
import gc
import json
import os
import re
import stat
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwtool.source import pointer as jp
from lwtool.source.finding import Finding
from lwtool.source.position import FILE_START, Pos, Span
from lwtool.source.source_map import Entry, SourceMap

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 256
MAX_NODES = 1_000_000  # values after alias expansion

CORE_TAG = "tag:yaml.org,2002:"
_STR = CORE_TAG + "str"
_SCALAR_TAGS = {CORE_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_COLLECTION_TAGS = {CORE_TAG + "map", CORE_TAG + "seq"}


@dataclass(slots=True)
class Document:
    """A loaded file: its JSON value and where each part of it stands."""

    path: str
    text: str
    value: Any
    source_map: SourceMap
    format: str  # "yaml" or "json"
    findings: list[Finding] = field(default_factory=list)  # non-fatal (duplicate keys)


class LoadFailed(Exception):
    """The file could not be turned into a JSON value; `findings` say where and why."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(findings[0].message if findings else "load failed")
        self.findings = findings


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
        raise _fail(path, "parse.too_large",
                    f"the file is larger than the {MAX_FILE_BYTES // (1024 * 1024)} MiB limit")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise _fail(path, "parse.invalid",
                    "the file is binary (it contains a NUL byte), not YAML or JSON text",
                    _byte_pos(data, nul))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fail(path, "parse.invalid",
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


def _fail(path: str, code: str, message: str, pos: Pos | None = None,
          pointer: str = "") -> LoadFailed:
    span = Span(pos, Pos(pos.line, pos.column + 1)) if pos else FILE_START
    return LoadFailed([Finding(code, message, path, pointer, span)])


def _byte_pos(data: bytes, offset: int) -> Pos:
    head = data[:offset]
    line_start = head.rfind(b"\n") + 1
    return Pos(head.count(b"\n") + 1, len(head[line_start:].decode("utf-8", "replace")) + 1)


def _load(text: str, path: str, fmt: str) -> Document:
    if not text.strip():
        raise _fail(path, "parse.invalid", "the file is empty")
    builder = _JsonBuilder(text, path) if fmt == "json" else _YamlBuilder(text, path)
    value = builder.build()
    return Document(path, text, value, builder.source_map, fmt, builder.findings)


def _deeper_than(value: Any, limit: int, text: str) -> bool:
    """Whether containers nest more than `limit` deep (cheap when the text cannot)."""
    if text.count("[") + text.count("{") <= limit or not isinstance(value, (dict, list)):
        return False
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        node, depth = todo.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                todo.append((child, depth + 1))
    return False


def _join(parent: str, key: str) -> str:
    if "~" in key or "/" in key:
        return jp.join(parent, key)
    return parent + "/" + key


class _Builder:
    """What both builders share: limits, duplicate-key findings, the source map."""

    def __init__(self, path: str, source_map: SourceMap) -> None:
        self.path = path
        self.nodes = 0
        self.source_map = source_map
        self.findings: list[Finding] = []

    def too_large(self, message: str, pos: Pos, pointer: str) -> LoadFailed:
        return _fail(self.path, "parse.too_large", message, pos, pointer)

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


def _mark_pos(mark: Any) -> tuple[int, int]:
    return mark.line + 1, mark.column + 1


class _Offsets:
    """Character offset -> 1-based (line, column), with the line index built on demand."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts: list[int] | None = None

    def __call__(self, offset: int) -> tuple[int, int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


class _YamlBuilder(_Builder):
    """Entries hold character offsets (plain ints: marks kept alive cost the GC ~40%)."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(path, SourceMap(_Offsets(text)))
        self.text = text

    def build(self) -> Any:
        from ruamel.yaml.error import MarkedYAMLError

        # The builder makes tens of thousands of small objects that all stay alive;
        # the cyclic GC would scan them again and again for nothing (~40% of the time).
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._build()
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            pos = Pos(mark.line + 1, mark.column + 1) if mark is not None else Pos(1, 1)
            problem = exc.problem or exc.context or "invalid YAML"
            raise _fail(self.path, "parse.invalid", f"invalid YAML: {problem}", pos) from None
        finally:
            if gc_was_enabled:
                gc.enable()

    def _build(self) -> Any:
        from ruamel.yaml import events as ev
        from ruamel.yaml.clib._ruamel_yaml import CParser

        scalar_event, alias_event = ev.ScalarEvent, ev.AliasEvent
        map_start, seq_start = ev.MappingStartEvent, ev.SequenceStartEvent
        map_end, seq_end = ev.MappingEndEvent, ev.SequenceEndEvent
        entries = self.source_map.entries
        get_event = CParser(self.text).get_event
        # A frame: [container, pointer, start line, start col, key entry part, anchor,
        #           size, pending key, pending key position (tuple) ]
        stack: list[list[Any]] = []
        anchors: dict[str, tuple[Any, int]] = {}
        open_anchors: set[str] = set()
        root: list[Any] = []
        documents = 0
        no_key = (None, None)
        while True:
            event = get_event()
            kind = type(event)
            if kind is scalar_event:
                sm, em = event.start_mark, event.end_mark
                top = stack[-1] if stack else None
                if top is not None and top[7] is None and type(top[0]) is dict:
                    key = event.value
                    if event.tag is not None and event.tag != "!" and event.tag not in _SCALAR_TAGS:
                        raise self._tag_error(event.tag, sm, top[1])
                    if key in top[0]:
                        self.duplicate(key, _join(top[1], key),
                                       Span(Pos(*_mark_pos(sm)), Pos(*_mark_pos(em))))
                    top[7], top[8] = key, (sm.index, em.index)
                    continue
                # The hot path (most events): inlined on purpose.
                if top is None:
                    pointer, kpos = "", no_key
                elif type(top[0]) is dict:
                    pointer, kpos = _join(top[1], top[7]), top[8]
                else:
                    pointer, kpos = f"{top[1]}/{len(top[0])}", no_key
                raw, tag = event.value, event.tag
                if tag is None and event.implicit[0]:
                    tag = _resolved.get(raw) or _resolve(raw)
                if tag is None or tag == "!" or tag == _STR:
                    value, style = raw, event.style or ""
                else:
                    value, style = self._scalar(event, tag, pointer), None
                entries[pointer] = (sm.index, em.index, kpos[0], kpos[1], style)
                if event.anchor:
                    anchors[event.anchor] = (value, 1)
                if top is None:
                    root.append(value)
                else:
                    top[6] += 1
                    if type(top[0]) is list:
                        top[0].append(value)
                    else:
                        top[0][top[7]] = value
                        top[7] = None
            elif kind is map_start or kind is seq_start:
                sm = event.start_mark
                top = stack[-1] if stack else None
                if top is not None and top[7] is None and type(top[0]) is dict:
                    raise _fail(self.path, "parse.invalid",
                                "a mapping key must be a string, not a collection",
                                Pos(sm.line + 1, sm.column + 1), top[1])
                pointer, kpos = self._child(top)
                tag = event.tag
                if tag is not None and tag != "!" and tag not in _COLLECTION_TAGS:
                    raise self._tag_error(tag, sm, pointer)
                self.check_depth(len(stack) + 1, Pos(sm.line + 1, sm.column + 1), pointer)
                stack.append([{} if kind is map_start else [], pointer, sm.index, None, kpos,
                              event.anchor, 1, None, no_key])
                if event.anchor:
                    open_anchors.add(event.anchor)
            elif kind is map_end or kind is seq_end:
                frame = stack.pop()
                entries[frame[1]] = (frame[2], event.end_mark.index, frame[4][0], frame[4][1],
                                     None)
                if frame[5]:
                    open_anchors.discard(frame[5])
                    anchors[frame[5]] = (frame[0], frame[6])
                self._attach(stack[-1] if stack else None, root, frame[0], frame[6])
            elif kind is alias_event:
                sm = event.start_mark
                pos = Pos(sm.line + 1, sm.column + 1)
                top = stack[-1] if stack else None
                name = event.anchor
                if top is not None and top[7] is None and type(top[0]) is dict:
                    raise _fail(self.path, "parse.invalid", "an alias cannot be a mapping key",
                                pos, top[1])
                pointer, kpos = self._child(top)
                if name in open_anchors:
                    raise _fail(self.path, "parse.invalid",
                                f"recursive alias *{name} refers to a value that contains it",
                                pos, pointer)
                if name not in anchors:
                    raise _fail(self.path, "parse.invalid", f"unknown alias *{name}", pos, pointer)
                value, size = anchors[name]
                self.count(size, pos, pointer)
                entries[pointer] = (sm.index, event.end_mark.index, kpos[0], kpos[1], None)
                # A copy, so that an edit of one place never changes another.
                if type(value) is dict or type(value) is list:
                    value = copy.deepcopy(value)
                self._attach(top, root, value, size)
            elif kind is ev.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    sm = event.start_mark
                    raise _fail(self.path, "parse.invalid",
                                "the file holds more than one YAML document",
                                Pos(sm.line + 1, sm.column + 1))
            elif kind is ev.StreamEndEvent:
                break
        if not root:
            raise _fail(self.path, "parse.invalid", "the file is empty")
        return root[0]

    @staticmethod
    def _child(top: list[Any] | None) -> tuple[str, tuple[Any, Any]]:
        if top is None:
            return "", (None, None)
        if type(top[0]) is dict:
            return _join(top[1], top[7]), top[8]
        return f"{top[1]}/{len(top[0])}", (None, None)

    def _attach(self, top: list[Any] | None, root: list[Any], value: Any, size: int) -> None:
        self.nodes += 1
        if top is None:
            root.append(value)
            return
        top[6] += size
        if type(top[0]) is list:
            top[0].append(value)
        else:
            top[0][top[7]] = value
            top[7] = None

    def _tag_error(self, tag: str, mark: Any, pointer: str) -> LoadFailed:
        short = "!!" + tag[len(CORE_TAG):] if tag.startswith(CORE_TAG) else tag
        return _fail(self.path, "parse.unsafe_tag",
                     f"tag {short} is not allowed (only plain JSON values are loaded)",
                     Pos(mark.line + 1, mark.column + 1), pointer)

    def _scalar(self, event: Any, tag: str, pointer: str) -> Any:
        """A non-string scalar: a core-schema tag, or a finding for any other tag."""
        if tag not in _SCALAR_TAGS:
            raise self._tag_error(tag, event.start_mark, pointer)
        try:
            return _construct(tag, event.value)
        except ValueError as exc:
            raise _fail(self.path, "parse.invalid", str(exc),
                        Pos(*_mark_pos(event.start_mark)), pointer) from None


_resolved: dict[str, str] = {}
_constructor: Any = None


def _resolve(value: str) -> str:
    """The YAML 1.2 core-schema tag of a plain scalar (ruamel's resolver, memoized)."""
    tag = _resolved.get(value)
    if tag is None:
        from ruamel.yaml.nodes import ScalarNode
        from ruamel.yaml.resolver import VersionedResolver

        tag = str(VersionedResolver(version=(1, 2)).resolve(ScalarNode, value, (True, False)))
        if len(_resolved) < 4096:
            _resolved[value] = tag
    return tag


def _construct(tag: str, raw: str) -> Any:
    """A core-schema scalar as a JSON value; ruamel's safe constructor does the parsing."""
    name = tag[len(CORE_TAG):]
    if name == "timestamp":
        return raw
    if name == "null":
        return None
    global _constructor
    if _constructor is None:
        from ruamel.yaml import YAML

        _constructor = YAML(typ="safe", pure=True).constructor
    from ruamel.yaml.nodes import ScalarNode

    node = ScalarNode(tag, raw)
    if name == "bool":
        return bool(_constructor.construct_yaml_bool(node))
    if name == "int":
        return int(_constructor.construct_yaml_int(node))
    number = float(_constructor.construct_yaml_float(node))
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"'{raw}' has no JSON form (NaN and infinities are not JSON)")
    return number


_WS = re.compile(r"[ \t\n\r]*")


def _no_constant(name: str) -> Any:
    raise ValueError(f"'{name}' has no JSON form (NaN and infinities are not JSON)")


class _DuplicateKey(Exception):
    pass


def _pairs_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _DuplicateKey
    return result


class _JsonBuilder(_Builder):
    """JSON values come from `json.loads`; positions from an iterative walk with the
    standard library's scanners, run only when a position is asked for, or when
    `json.loads` fails or sees a duplicate key (then the walk makes the finding)."""

    def __init__(self, text: str, path: str) -> None:
        self.lc = _Offsets(text)
        super().__init__(path, SourceMap(self.lc, build=self._walk_entries))
        self.text = text
        # The decoder's own C scanner, for one scalar at a time (typeshed omits it).
        decoder: Any = json.JSONDecoder(parse_constant=_no_constant)
        self.scan_once = decoder.scan_once

    def pos(self, offset: int) -> Pos:
        return Pos(*self.lc(offset))

    def error(self, message: str, offset: int, pointer: str = "") -> LoadFailed:
        return _fail(self.path, "parse.invalid", f"invalid JSON: {message}", self.pos(offset),
                     pointer)

    def build(self) -> Any:
        try:
            value = json.loads(self.text, object_pairs_hook=_pairs_without_duplicates,
                               parse_constant=_no_constant)
            # The fast path must keep the walk's depth limit, or a finding's position
            # (built later by the walk) would fail on a document that loaded.
            if not _deeper_than(value, MAX_DEPTH, self.text):
                return value
        except (ValueError, RecursionError, _DuplicateKey):
            pass
        entries: dict[str, Entry] = {}
        value = self._walk(entries)
        self.source_map = SourceMap(self.lc, build=lambda: entries)
        return value

    def _walk_entries(self) -> dict[str, Entry]:
        entries: dict[str, Entry] = {}
        self._walk(entries)
        return entries

    def _walk(self, entries: dict[str, Entry]) -> Any:
        text = self.text
        ws = _WS.match
        i = ws(text, 0).end()  # type: ignore[union-attr]
        no_key: tuple[int | None, int | None] = (None, None)
        # A frame: [container, pointer, start offset, key part, pending key, state]
        stack: list[list[Any]] = []
        root: list[Any] = []
        pointer, kpos = "", no_key
        while True:
            # Here a value starts at i, to be stored at `pointer` with key part `kpos`.
            if i < len(text) and text[i] in "[{":
                self.check_depth(len(stack) + 1, self.pos(i), pointer)
                stack.append([{} if text[i] == "{" else [], pointer, i, kpos, None, "start"])
                i += 1
            else:
                start = i
                value, i = self._scalar(i, pointer)
                entries[pointer] = (start, i, kpos[0], kpos[1],
                                    '"' if type(value) is str else None)
                if not stack:
                    root.append(value)
                else:
                    self._store(stack[-1], value)
            # Close finished containers, then find where the next value starts.
            while stack:
                frame = stack[-1]
                container, ptr = frame[0], frame[1]
                closer = "}" if type(container) is dict else "]"
                i = ws(text, i).end()  # type: ignore[union-attr]
                if i < len(text) and text[i] == closer and frame[5] != "comma":
                    i += 1
                    stack.pop()
                    entries[ptr] = (frame[2], i, frame[3][0], frame[3][1], None)
                    if stack:
                        self._store(stack[-1], container)
                    else:
                        root.append(container)
                    continue
                if frame[5] == "value":
                    if i >= len(text) or text[i] != ",":
                        raise self.error(f"expected ',' or '{closer}'", i, ptr)
                    i = ws(text, i + 1).end()  # type: ignore[union-attr]
                    frame[5] = "comma"
                    if i < len(text) and text[i] == closer:
                        raise self.error("trailing comma", i, ptr)
                if type(container) is dict:
                    pointer, kpos, i = self._key(frame, i, entries)
                else:
                    pointer, kpos = f"{ptr}/{len(container)}", no_key
                frame[5] = "value"
                break
            if not stack and root:
                break
        end = ws(text, i).end()  # type: ignore[union-attr]
        if end != len(text):
            raise self.error("extra data after the document", end)
        return root[0]

    def _key(self, frame: list[Any], i: int,
             entries: dict[str, Entry]) -> tuple[str, tuple[int, int], int]:
        text = self.text
        if i >= len(text) or text[i] != '"':
            raise self.error("expected a property name in double quotes", i, frame[1])
        try:
            key, kend = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        except json.JSONDecodeError as exc:
            raise self.error(exc.msg, exc.pos, frame[1]) from None
        kstart = i
        pointer = _join(frame[1], key)
        if key in frame[0]:
            first = entries.get(pointer)
            where = f" (first at line {self.lc(first[2])[0]})" if first else ""
            self.findings.append(Finding("parse.duplicate_key", f"duplicate key '{key}'{where}",
                                         self.path, pointer, Span(self.pos(i), self.pos(kend))))
        frame[4] = key
        i = _WS.match(text, kend).end()  # type: ignore[union-attr]
        if i >= len(text) or text[i] != ":":
            raise self.error("expected ':' after a property name", i, frame[1])
        return pointer, (kstart, kend), _WS.match(text, i + 1).end()  # type: ignore[union-attr]
    def _scalar(self, i: int, pointer: str) -> tuple[Any, int]:
        try:
            return self.scan_once(self.text, i)  # type: ignore[no-any-return]
        except StopIteration:
            raise self.error("expected a value", i, pointer) from None
        except json.JSONDecodeError as exc:
            raise self.error(exc.msg, exc.pos, pointer) from None
        except ValueError as exc:
            raise _fail(self.path, "parse.invalid", str(exc), self.pos(i), pointer) from None

    @staticmethod
    def _store(frame: list[Any], value: Any) -> None:
        if type(frame[0]) is list:
            frame[0].append(value)
        else:
            frame[0][frame[4]] = value

"""JSON through orjson where it reads the text as the standard library would, else the
standard library's scanners (`json.loads` for the values, its string scanner for an
iterative walk that finds positions), with the same limits as YAML; duplicate keys
and non-JSON constants (NaN, Infinity) are findings."""

from __future__ import annotations

import json
import re
from typing import Any

try:
    import orjson
except ImportError:  # a base install (validate, check, lsp): the standard library alone
    orjson = None  # type: ignore[assignment]

from lwtool.source.builder import MAX_DEPTH, Builder, LoadFailed, Offsets, fail, join
from lwtool.source.finding import Finding
from lwtool.source.position import Pos, Span
from lwtool.source.source_map import Entry, SourceMap

_CONTAINERS = frozenset((dict, list))


def deeper_than(value: Any, limit: int, text: str) -> bool:
    """Whether containers nest more than `limit` deep (cheap when the text cannot).
    `value` is what `json.loads` made: plain dicts and lists, walked a level at a time."""
    if text.count("[") + text.count("{") <= limit or not isinstance(value, (dict, list)):
        return False
    level, depth = [value], 1
    while level:
        if depth > limit:
            return True
        # One comprehension a level (no append calls): the containers one level down.
        level = [child for node in level
                 for child in (node.values() if type(node) is dict else node)
                 if type(child) in _CONTAINERS]
        depth += 1
    return False


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


def _fast_value(text: str) -> Any:
    """orjson's value of `text` (~4x faster than `json.loads` with a duplicate check),
    or `_SLOW` where the standard library must read it: without orjson (a base
    install); what orjson refuses (NaN, lone surrogates, bad JSON: json.loads then says
    what); an integer of 19 digits or more (orjson makes a float of one beyond 64 bits,
    json.loads keeps it exact); a duplicate key, which orjson keeps quietly. Each
    object member has one colon outside strings, and orjson writes every member's colon
    and no escaped one: with no `\\u003a` escape in the text (an escaped colon would
    count in the value but not in the text), the text and the value written again hold
    as many colons only when no member was lost to a duplicate key."""
    if orjson is None or "\\u003a" in text or "\\u003A" in text \
            or _LONG_INTEGER in text.encode("utf-8", "surrogatepass").translate(_DIGITS):
        return _SLOW
    try:
        value = orjson.loads(text)
        written = orjson.dumps(value)  # JSONEncodeError: deeper than orjson writes
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):
        return _SLOW
    return value if written.count(b":") == text.count(":") else _SLOW


_SLOW = object()
# Each decimal digit mapped to `1`, every other byte to a space: a run of 19 `1`s is a
# number orjson may not read exactly (or a long digit run in a string: json.loads then).
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_INTEGER = b"1" * 19


class JsonBuilder(Builder):
    """JSON values come from orjson or `json.loads` (`_fast_value`); positions from an
    iterative walk with the standard library's scanners, run only when a position is
    asked for, or when `json.loads` fails or sees a duplicate key (then the walk makes
    the finding)."""

    def __init__(self, text: str, path: str) -> None:
        self.lc = Offsets(text)
        super().__init__(path, SourceMap(self.lc, build=self._walk_entries))
        self.text = text
        # The decoder's own C scanner, for one scalar at a time (typeshed omits it).
        decoder: Any = json.JSONDecoder(parse_constant=_no_constant)
        self.scan_once = decoder.scan_once

    def pos(self, offset: int) -> Pos:
        return Pos(*self.lc(offset))

    def error(self, message: str, offset: int, pointer: str = "") -> LoadFailed:
        return fail(self.path, "parse.invalid", f"invalid JSON: {message}", self.pos(offset),
                     pointer)

    def build(self) -> Any:
        value = _fast_value(self.text)
        if value is not _SLOW:  # orjson writes no value deeper than MAX_DEPTH (tested)
            return value
        try:
            value = json.loads(self.text, object_pairs_hook=_pairs_without_duplicates,
                               parse_constant=_no_constant)
            # The fast path must keep the walk's depth limit, or a finding's position
            # (built later by the walk) would fail on a document that loaded.
            if not deeper_than(value, MAX_DEPTH, self.text):
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
        pointer = join(frame[1], key)
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
            raise fail(self.path, "parse.invalid", str(exc), self.pos(i), pointer) from None

    @staticmethod
    def _store(frame: list[Any], value: Any) -> None:
        if type(frame[0]) is list:
            frame[0].append(value)
        else:
            frame[0][frame[4]] = value

"""YAML through ruamel.yaml's C-backed event parser (libyaml), built iteratively into
plain JSON values with a position for every key and item: tags beyond the core schema
are findings, aliases are budgeted and recursive ones rejected, depth is bounded
without recursion. Scalars are parsed by ruamel (YAML 1.2 core schema)."""

from __future__ import annotations

import copy
import gc
from typing import Any

from lwtool.source.builder import Builder, LoadFailed, Offsets, fail, join
from lwtool.source.position import Pos, Span
from lwtool.source.source_map import SourceMap

CORE_TAG = "tag:yaml.org,2002:"
_STR = CORE_TAG + "str"
_SCALAR_TAGS = {CORE_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_COLLECTION_TAGS = {CORE_TAG + "map", CORE_TAG + "seq"}


def _mark_pos(mark: Any) -> tuple[int, int]:
    return mark.line + 1, mark.column + 1


class YamlBuilder(Builder):
    """Entries hold character offsets (plain ints: marks kept alive cost the GC ~40%)."""

    def _collection_key(self, parent_start: int) -> str:
        """The message for a collection used as a mapping key: almost always an
        expression written without quotes, which YAML reads as nested flow mappings."""
        if self.text.startswith("{{", parent_start):
            end = self.text.find("}}", parent_start)
            written = self.text[parent_start:end + 2] if end != -1 else "{{ ... }}"
            return (f"{written} without quotes is read by YAML as nested mappings: quote "
                    f"the expression (\"{written}\")")
        return "a mapping key must be a string, not a collection"

    def __init__(self, text: str, path: str) -> None:
        super().__init__(path, SourceMap(Offsets(text)))
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
            raise fail(self.path, "parse.invalid", f"invalid YAML: {problem}", pos) from None
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
                        self.duplicate(key, join(top[1], key),
                                       Span(Pos(*_mark_pos(sm)), Pos(*_mark_pos(em))))
                    top[7], top[8] = key, (sm.index, em.index)
                    continue
                # The hot path (most events): inlined on purpose.
                if top is None:
                    pointer, kpos = "", no_key
                elif type(top[0]) is dict:
                    pointer, kpos = join(top[1], top[7]), top[8]
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
                    raise fail(self.path, "parse.invalid", self._collection_key(top[2]),
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
                    raise fail(self.path, "parse.invalid", "an alias cannot be a mapping key",
                                pos, top[1])
                pointer, kpos = self._child(top)
                if name in open_anchors:
                    raise fail(self.path, "parse.invalid",
                                f"recursive alias *{name} refers to a value that contains it",
                                pos, pointer)
                if name not in anchors:
                    raise fail(self.path, "parse.invalid", f"unknown alias *{name}", pos, pointer)
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
                    raise fail(self.path, "parse.invalid",
                                "the file holds more than one YAML document",
                                Pos(sm.line + 1, sm.column + 1))
            elif kind is ev.StreamEndEvent:
                break
        if not root:
            raise fail(self.path, "parse.invalid", "the file is empty")
        return root[0]

    @staticmethod
    def _child(top: list[Any] | None) -> tuple[str, tuple[Any, Any]]:
        if top is None:
            return "", (None, None)
        if type(top[0]) is dict:
            return join(top[1], top[7]), top[8]
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
        return fail(self.path, "parse.unsafe_tag",
                     f"tag {short} is not allowed (only plain JSON values are loaded)",
                     Pos(mark.line + 1, mark.column + 1), pointer)

    def _scalar(self, event: Any, tag: str, pointer: str) -> Any:
        """A non-string scalar: a core-schema tag, or a finding for any other tag."""
        if tag not in _SCALAR_TAGS:
            raise self._tag_error(tag, event.start_mark, pointer)
        try:
            return _construct(tag, event.value)
        except ValueError as exc:
            raise fail(self.path, "parse.invalid", str(exc),
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

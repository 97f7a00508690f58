"""The JSON loader's orjson path (json_builder._fast_value) against `json.loads`: it
either gives exactly the standard library's value or hands the text back to it (a
duplicate key, a long integer, an escaped colon, what orjson refuses), so a finding
and a value never depend on which path read the file."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwtool.source.builder import MAX_DEPTH
from lwtool.source.json_builder import _SLOW, _fast_value, deeper_than
from lwtool.source.loader import load_text

_SCALARS = (st.none() | st.booleans() | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(alphabet=st.sampled_from('ab:"\\é\u2028\x01 ') | st.characters(),
                      max_size=6))
_JSON = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(alphabet="ab:", max_size=3), inner,
                                       max_size=3), max_leaves=30)


def _same(a: Any, b: Any) -> bool:
    """Equal with the same types all the way down (1 and 1.0 and True differ; -0.0 is
    not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


@given(_JSON, st.booleans(), st.booleans())
def test_the_fast_path_reads_what_json_reads_or_hands_it_back(
        value: Any, ascii_only: bool, spaced: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=1 if spaced else None)
    fast = _fast_value(text)
    assert fast is _SLOW or _same(fast, json.loads(text))


def test_a_plain_document_takes_the_fast_path() -> None:
    """Colons in strings and keys, escapes, unicode, numbers up to 18 digits: orjson's."""
    text = ('{"a:b": "x:y", "list": [1, -2.5e-3, null, true, "\\u00e9\\n"], '
            '"n": 123456789012345678, "nested": {"k": {"k": "é"}}}')
    fast = _fast_value(text)
    assert fast is not _SLOW and _same(fast, json.loads(text))


@given(st.dictionaries(st.text(alphabet="ab:", max_size=3), _SCALARS, min_size=1,
                       max_size=4), st.data())
def test_a_duplicate_key_always_takes_the_standard_library_s_path(
        members: dict[str, Any], data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(members)))
    pairs = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in members.items()]
    pairs.insert(data.draw(st.integers(0, len(pairs))), f"{json.dumps(key)}: 0")
    text = json.dumps({"outer": 1, "x": [1]})[:-1] + ', "inner": {' + ", ".join(pairs) + "}}"
    assert _fast_value(text) is _SLOW


@pytest.mark.parametrize("text", [
    '{"a": 12345678901234567890123}',  # beyond 64 bits: orjson would make it a float
    '{"a": 9223372036854775808}',  # 19 digits: json.loads is asked
    '{"k": 1, "k": 2, "s": "\\u003a"}',  # an escaped colon would hide the duplicate
    '{"a": NaN}', '{"a": "\\ud800"}', '\ufeff{}', '{"a": 1,}', '[1e400]',
    '[' * 300 + ']' * 300,  # deeper than orjson writes
])
def test_what_orjson_may_read_otherwise_goes_to_json_loads(text: str) -> None:
    assert _fast_value(text) is _SLOW


def test_a_long_integer_loads_exactly_and_a_nested_duplicate_stays_a_finding() -> None:
    document = load_text('{"n": 123456789012345678901234567890, "s": "a:b"}', "x.json")
    assert document.value == {"n": 123456789012345678901234567890, "s": "a:b"}
    assert not document.findings
    document = load_text('{"a": {"k": 1,\n "k": 2}, "b": "k:"}', "x.json")
    assert document.value == {"a": {"k": 2}, "b": "k:"}
    [finding] = document.findings
    assert (finding.code, finding.line) == ("parse.duplicate_key", 2)


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_a_value_orjson_reads_is_within_the_depth_limit(opening: str) -> None:
    """The fast path skips the depth check: orjson writes no value nested deeper than
    254 levels, under MAX_DEPTH (an orjson that wrote deeper ones fails this test)."""
    closing = "]" if opening == "[" else "}"
    for depth in (MAX_DEPTH - 2, MAX_DEPTH, MAX_DEPTH + 1):
        text = opening * (depth - 1) + "[]" + closing * (depth - 1)
        fast = _fast_value(text)
        assert fast is _SLOW or not deeper_than(fast, MAX_DEPTH, text)
    assert _fast_value("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)) is _SLOW


def test_without_orjson_the_standard_library_reads_every_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A base install (validate, check, lsp) has no orjson: the same values, findings."""
    from lwtool.source import json_builder

    monkeypatch.setattr(json_builder, "orjson", None)
    assert _fast_value('{"a": 1}') is _SLOW
    document = load_text('{"a": [1, 2.5],\n "a": "x:y"}', "x.json")
    assert document.value == {"a": "x:y"}
    assert [f.code for f in document.findings] == ["parse.duplicate_key"]

"""Canonicalization properties: idempotent, independent of key order and formatting."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from lwtool.canonical.digest import sha256_of_json
from lwtool.canonical.jcs import canonical_bytes
from lwtool.source.loader import load_text

scalars = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.floats(
    # Integral doubles of 2**53 and beyond print as integers (RFC 8785), which read back
    # as Python ints outside the safe range; the loader flags those, so keep below it.
    min_value=-(2.0**53) + 1, max_value=2.0**53 - 1, allow_nan=False) | st.text(max_size=20)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
    st.text(max_size=8), inner, max_size=5), max_leaves=30)


@given(values)
def test_idempotent(value: object) -> None:
    once = canonical_bytes(value)
    assert canonical_bytes(json.loads(once)) == once


@given(st.dictionaries(st.text(max_size=8), scalars, max_size=8))
def test_key_order_does_not_matter(value: dict[str, object]) -> None:
    reordered = dict(reversed(list(value.items())))
    assert sha256_of_json(value) == sha256_of_json(reordered)


@given(values)
def test_formatting_does_not_matter(value: object) -> None:
    compact = json.dumps(value, separators=(",", ":"))
    pretty = json.dumps(value, indent=4)
    a = load_text(compact, "a.json").value
    b = load_text(pretty, "b.json").value
    assert canonical_bytes(a) == canonical_bytes(b) == canonical_bytes(value)


def test_yaml_and_json_hash_alike() -> None:
    yaml_doc = "b: [1, 2.5, x]\na: {z: null, y: true}\n"
    json_doc = '{"a": {"y": true, "z": null}, "b": [1, 2.5, "x"]}'
    assert sha256_of_json(load_text(yaml_doc, "a.yaml").value) == sha256_of_json(
        load_text(json_doc, "a.json").value)


def test_hash_format() -> None:
    digest = sha256_of_json({"a": 1})
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64


# Keys and strings that stress the fast path: control characters, quotes, backslashes,
# U+2028, DEL, characters above U+E000 and beyond U+FFFF (UTF-16 order differs there).
tricky_text = st.text(alphabet=st.sampled_from(
    ["a", "Z", "\x00", "\x1f", "\x7f", '"', "\\", "/", "\u2028", "\ue000", "\uffff", "é",
     "\U0001f600", "\U00010000", "\t", "\n"]), max_size=6) | st.text(max_size=6)
plain_scalars = st.none() | st.booleans() | st.integers(-(2**53) - 1, 2**53 + 1) | tricky_text
plain_values = st.recursive(plain_scalars, lambda inner: st.lists(inner, max_size=4) |
                            st.dictionaries(tricky_text, inner, max_size=5), max_leaves=25)


@given(plain_values | values)
def test_fast_path_is_rfc8785(value: object) -> None:
    import pytest
    import rfc8785

    from lwtool.canonical.jcs import NotCanonicalizable

    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(NotCanonicalizable):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected


def test_fast_path_leaves_what_it_cannot_write_to_rfc8785() -> None:
    import pytest

    from lwtool.canonical.jcs import NotCanonicalizable

    assert canonical_bytes({"\U0001f600": 1, "\ue000": 2}) == \
        '{"\U0001f600":1,"\ue000":2}'.encode()  # UTF-16 order: the surrogate pair first
    assert canonical_bytes([1.0, 1e21, 2**53 - 1]) == b"[1,1e+21,9007199254740991]"
    for bad in ({1: "x"}, 2**53, -(2**53), "\ud800", float("nan")):
        with pytest.raises(NotCanonicalizable):
            canonical_bytes(bad)


@given(plain_values)
def test_both_fast_writers_agree(value: object) -> None:
    """orjson (the `run` extra) and the standard library (a base install) write the same
    canonical bytes, or both leave the value to rfc8785."""
    from unittest import mock

    from lwtool.canonical import jcs

    if not jcs._plain(value):
        return
    with_orjson = jcs._fast(value)
    with mock.patch.object(jcs, "orjson", None):
        assert jcs._fast(value) == with_orjson

"""Values at the step boundary are plain JSON: normalized (tuples) or refused."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwtool.canonical.plain_json import NotJson, to_json

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53 + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=30)


@given(JSON)
def test_json_values_pass_unchanged(value: object) -> None:
    assert to_json(value) == value
    assert json.loads(json.dumps(to_json(value))) == value


def test_tuples_become_lists() -> None:
    assert to_json(("first", ("a", 1))) == ["first", ["a", 1]]
    assert to_json({"p": ("x",)}) == {"p": ["x"]}


@pytest.mark.parametrize(("value", "needle"), [
    ({0: "first"}, "at the top: the key 0 is a int"),
    ({"a": {"b": b"raw"}}, "at /a/b: a bytes is not a JSON value"),
    ({"s": {1, 2}}, "a set is not a JSON value"),
    ([object()], "at /0: a object"),
    ({"x": math.nan}, "nan has no JSON form"),
    ({"x": [math.inf]}, "at /x/0: inf has no JSON form"),
    ({"t": "\ud800"}, "lone surrogate"),
    ({"n": 2**60}, "beyond ±2**53"),
    ({"a/b": {"~": 2**70}}, "at /a~1b/~0"),
])
def test_non_json_values_are_refused_with_where(value: object, needle: str) -> None:
    with pytest.raises(NotJson) as info:
        to_json(value)
    assert needle in str(info.value)


def test_deep_values_are_refused_not_a_recursion_error() -> None:
    value: object = "leaf"
    for _ in range(10_000):
        value = [value]
    with pytest.raises(NotJson, match="deeper than 256"):
        to_json(value)

"""The JSON loader's depth check (json_builder.deeper_than) against a plain recursive
count, for nested values of every shape; and the limit's edge through the loader."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lwtool.source.builder import MAX_DEPTH
from lwtool.source.json_builder import deeper_than
from lwtool.source.loader import LoadFailed, load_bytes


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=40)


@given(_JSON, st.integers(min_value=0, max_value=8))
def test_deeper_than_is_the_nesting_depth(value: Any, limit: int) -> None:
    text = json.dumps(value)
    assert deeper_than(json.loads(text), limit, text) == (_depth(value) > limit)


@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1])
def test_the_depth_limit_is_exact(depth: int) -> None:
    text = '{"a": ' * (depth - 1) + "[1]" + "}" * (depth - 1)
    if depth <= MAX_DEPTH:
        assert load_bytes(text.encode(), "x.json").value is not None
    else:
        with pytest.raises(LoadFailed) as failed:
            load_bytes(text.encode(), "x.json")
        assert failed.value.findings[0].code == "parse.too_large"

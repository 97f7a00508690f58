"""`short_hash` keeps the bytes earlier logs' hashes were taken over (the standard
library's sorted compact JSON) while orjson writes them: for any JSON value, and for
what orjson refuses or writes differently."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date

from hypothesis import given
from hypothesis import strategies as st

from lwtool.record.ids import hash_bytes

_LEGACY = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str).encode


def legacy(value: object) -> bytes:
    return _LEGACY(value).encode("utf-8")


# Floats of every magnitude, the small ones (1e-05 against orjson's 0.00001) above all.
floats = st.floats(allow_nan=False, allow_infinity=False) | st.builds(
    lambda mantissa, exponent: mantissa * 10.0 ** exponent,
    st.floats(-10, 10, allow_nan=False), st.integers(-12, -3))
scalars = (st.none() | st.booleans() | st.integers(-(2**80), 2**80) | floats
           | st.text(max_size=12) | st.sampled_from(["e-5", "0.00001", "x0.0000y", "sha256:3e5"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(
    st.text(max_size=8), inner, max_size=5), max_leaves=30)


@given(values)
def test_same_bytes_as_the_standard_library(value: object) -> None:
    assert hash_bytes(value) == legacy(value)


@dataclass
class Point:
    x: int


def test_what_orjson_refuses_or_writes_otherwise_goes_through_the_standard_library() -> None:
    for value in ({1: "a"}, [2**70], {"d": date(2026, 12, 4)}, Point(1), (1, 2),
                  {"f": 1e-05, "g": 2.5e-07, "h": 0.00012, "s": "x"}):
        assert hash_bytes(value) == legacy(value), value

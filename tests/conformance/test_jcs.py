"""RFC 8785 reference vectors: canonical bytes must match exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lwtool.canonical.jcs import canonical_bytes

HERE = Path(__file__).parent / "jcs"
NAMES = sorted(p.stem for p in (HERE / "input").glob("*.json"))


def test_vectors_present() -> None:
    assert len(NAMES) >= 6


@pytest.mark.parametrize("name", NAMES)
def test_reference_vector(name: str) -> None:
    value = json.loads((HERE / "input" / f"{name}.json").read_text(encoding="utf-8"))
    expected = (HERE / "output" / f"{name}.json").read_bytes().rstrip(b"\n")
    assert canonical_bytes(value) == expected

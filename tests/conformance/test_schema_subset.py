"""LWIR's JSON Schema subset, as data: each case lists the (relative pointer, message
fragment) of every problem `subset_problems` must report, and nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lwtool.source import pointer as jp
from lwtool.validate.schema_subset import subset_problems

CASES = json.loads((Path(__file__).parent / "schema_subset" / "cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_schema_subset(case: dict[str, Any]) -> None:
    got = sorted((jp.from_parts(path), message) for path, message, _ in
                 subset_problems(case["schema"]))
    expected = sorted(case["problems"])
    assert [p for p, _ in got] == [p for p, _ in expected], got
    for (_, message), (_, fragment) in zip(got, expected, strict=True):
        assert fragment in message

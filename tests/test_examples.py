"""Every example validates clean and matches its committed lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwtool.lock.drift import check_file
from tests.conftest import ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.lwir.*")
                  if not p.name.endswith(".lock.json"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_is_valid_and_locked(path: Path) -> None:
    assert [f.as_text() for f in check_file(path)] == []

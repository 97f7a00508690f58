"""Every example validates clean and matches its committed lock; every example file
that takes an input has it at examples/inputs/<name>.json, and the definition
examples plan and run offline as their header says."""

from __future__ import annotations

from pathlib import Path

import pytest

from lwtool.lock.drift import check_file
from tests.conftest import ROOT

EXAMPLES = sorted(p for pattern in ("*.lwir.*", "*.definition.*")
                  for p in (ROOT / "examples").glob(pattern)
                  if not p.name.endswith(".lock.json"))
DEFINITIONS = [p for p in EXAMPLES if ".definition." in p.name]


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_is_valid_and_locked(path: Path) -> None:
    assert [f.as_text() for f in check_file(path)] == []


def test_there_is_a_definition_example_with_its_input() -> None:
    assert DEFINITIONS
    for path in DEFINITIONS:
        assert (ROOT / "examples" / "inputs" / f"{path.name.split('.')[0]}.json").is_file()


@pytest.mark.parametrize("path", DEFINITIONS, ids=[p.name for p in DEFINITIONS])
def test_a_definition_example_plans_and_runs_offline(path: Path, tmp_path: Path) -> None:
    import json

    from tests.conftest import run_cli

    given = ROOT / "examples" / "inputs" / f"{path.name.split('.')[0]}.json"
    planned = run_cli("plan", str(path), "-i", str(given), "-o", str(tmp_path / "p.lwir.yaml"),
                      "--offline", "--data-dir", str(tmp_path / "data"))
    assert planned.returncode == 0, planned.stderr
    ran = run_cli("run", str(path), "-i", str(given), "--offline", "--json", "--data-dir",
                  str(tmp_path / "data"))
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["status"] == "completed"

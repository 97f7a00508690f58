"""`--format sarif` as GitHub code scanning reads it: valid against the SARIF 2.1.0
JSON Schema (tests/fixtures/sarif-2.1.0.json), columns in code points, fingerprints
that follow a finding across edits elsewhere, and each rule's help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from lwtool.validate.registry import all_codes
from tests.cli.test_validate_cli import BAD
from tests.conftest import ROOT, run_cli

SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "sarif-2.1.0.json").read_text())


def _sarif(folder: Path, *names: str) -> dict[str, Any]:
    result = run_cli("validate", "--format", "sarif", *names, cwd=folder)
    assert result.returncode == 1, result.stderr
    value: dict[str, Any] = json.loads(result.stdout)
    return value


def _schema_errors(sarif: dict[str, Any]) -> list[str]:
    validator = jsonschema_rs.validator_for(SCHEMA)
    return [f"{'/'.join(map(str, e.instance_path))}: {e.message}"
            for e in validator.iter_errors(sarif)]


def test_the_output_is_valid_sarif_2_1_0(tmp_path: Path) -> None:
    (tmp_path / "bad.lwir.yaml").write_text(BAD)
    (tmp_path / "broken.json").write_text('{"a": [1,]}')
    sarif = _sarif(tmp_path, "bad.lwir.yaml", "broken.json")
    assert _schema_errors(sarif) == []
    run = sarif["runs"][0]
    assert run["columnKind"] == "unicodeCodePoints"
    assert {r["ruleId"] for r in run["results"]} == {
        "lwir.invalid_field", "step.missing_dependency", "parse.invalid"}


def test_the_schema_check_can_fail() -> None:
    assert _schema_errors({"version": "2.1.0", "runs": [{"results": []}]})  # no tool


def test_every_rule_has_help_and_a_link(tmp_path: Path) -> None:
    (tmp_path / "bad.lwir.yaml").write_text(BAD)
    rules = _sarif(tmp_path, "bad.lwir.yaml")["runs"][0]["tool"]["driver"]["rules"]
    by_id = {r["id"]: r for r in rules}
    field = by_id["lwir.invalid_field"]
    assert field["shortDescription"]["text"] == all_codes()["lwir.invalid_field"]
    assert "## Why" in field["help"]["markdown"]
    assert "```" not in field["help"]["text"] and field["help"]["text"].strip()
    assert field["helpUri"].endswith("/docs/rules#lwirinvalid_field")
    for rule in rules:
        assert rule["fullDescription"]["text"] and rule["help"]["markdown"]


@pytest.mark.parametrize("code", sorted(all_codes()))
def test_each_help_uri_names_a_heading_of_the_rules_page(code: str) -> None:
    """docs/rules.md has a heading per code; GitHub's anchor for `## \\`a.b_c\\`` is
    `#ab_c`, which is what helpUri points at."""
    page = (ROOT / "docs" / "rules.md").read_text()
    assert f"## `{code}`" in page or f"| `{code}` |" in page


def test_a_fingerprint_follows_its_finding_when_lines_are_added_above(tmp_path: Path) -> None:
    (tmp_path / "bad.lwir.yaml").write_text(BAD)
    before = _sarif(tmp_path, "bad.lwir.yaml")["runs"][0]["results"]
    (tmp_path / "bad.lwir.yaml").write_text("# a comment\n# and another\n" + BAD)
    after = _sarif(tmp_path, "bad.lwir.yaml")["runs"][0]["results"]

    def keyed(results: list[dict[str, Any]]) -> dict[str, int]:
        return {r["partialFingerprints"]["lwtoolFinding/v1"]:
                r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in results}

    old, new = keyed(before), keyed(after)
    assert old.keys() == new.keys() and len(old) == 2
    assert all(new[k] == old[k] + 2 for k in old)

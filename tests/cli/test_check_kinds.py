"""`lwtool check` (no paths) and the pre-commit hooks see every kind lwtool validates:
a broken *.workflow.yaml or *.definition.yaml fails them, as a broken *.lwir.yaml does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli

BROKEN = {
    "x.workflow.yaml": "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\n"
                       "metadata: {name: x}\nsteps: [{id: a, uses: nope}]\n",
    "x.definition.yaml": "apiVersion: littleworkflow.dev/v0.1\nkind: WorkflowDefinition\n"
                         "id: x\nplanner: {model: m}\nnonsense: 1\n",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_check_with_no_paths_fails_a_broken_file_of_every_kind(tmp_path: Path,
                                                               name: str) -> None:
    (tmp_path / name).write_text(BROKEN[name])
    done = run_cli("check", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert done.stdout.startswith(f"{name}:")
    assert run_cli("validate", cwd=tmp_path).returncode == 1


def test_the_pre_commit_hooks_match_every_kind() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    patterns = re.findall(r"files: (.+)", hooks)
    assert len(patterns) == 2
    for pattern in patterns:
        for name in ("a.lwir.yaml", "a.workflow.yml", "a.definition.yaml", "a.pipeline.json"):
            assert re.search(pattern.strip(), name), (pattern, name)


def test_validate_reads_a_lock_file_as_a_lock(tmp_path: Path) -> None:
    good = run_cli("validate", str(ROOT / "examples" / "refine-loop.lwir.lock.json"))
    assert good.returncode == 0 and good.stdout == ""
    (tmp_path / "bad.lock.json").write_text('{"x": 1}')
    bad = run_cli("validate", "bad.lock.json", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.startswith("bad.lock.json:1:1: error lock.invalid ")
    assert "lwir.unknown_kind" not in bad.stdout


def test_sarif_rules_have_names_and_every_code_a_heading(tmp_path: Path) -> None:
    import json

    (tmp_path / "x.workflow.yaml").write_text(BROKEN["x.workflow.yaml"])
    sarif = json.loads(run_cli("check", "--format", "sarif", cwd=tmp_path).stdout)
    rules = sarif["runs"][0]["tool"]["driver"]["rules"]
    assert rules and all(r["name"] != r["id"] and re.fullmatch(r"[A-Z][A-Za-z]+", r["name"])
                         for r in rules), rules
    headings = {line[4:-1] for line in (ROOT / "docs" / "rules.md").read_text().splitlines()
                if line.startswith("## `")}
    from lwtool.validate.registry import all_codes

    assert set(all_codes()) <= headings


def test_every_code_is_explained_in_full() -> None:
    from lwtool.validate.registry import rule_help

    for code, (summary, body) in rule_help().items():
        assert summary and "## What it flags" in body and "## Instead" in body, code
    shown = run_cli("explain", "parse.invalid").stdout
    assert "## Why" in shown and "quote expressions" in shown

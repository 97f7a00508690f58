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

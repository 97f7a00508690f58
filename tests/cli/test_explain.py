"""Every text finding ends with where its rule is explained; `lwtool explain CODE` prints
that explanation (What / Why / Example / Instead), and an unknown code is refused with
the nearest codes; `lwtool validate` with no path (or a folder) reads the folder as
`lwtool check` does, without following a link back up the tree."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import ROOT, run_cli

BROKEN = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: broken}
steps:
  - {id: a, uses: tool.call, with: {tool: t}}
  - id: b
    uses: tool.call
    with: {tool: t}
    input: {x: "{{ steps.a.output }}"}
"""


def test_a_text_finding_says_where_its_rule_is_explained(tmp_path: Path) -> None:
    (tmp_path / "broken.lwir.yaml").write_text(BROKEN)
    done = run_cli("validate", "broken.lwir.yaml", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines and all(line.endswith(f"[lwtool explain {line.split()[2]}]")
                         for line in lines), lines
    code = lines[0].split()[2]
    explained = run_cli("explain", code)
    assert explained.returncode == 0
    for heading in ("## What it flags", "## Why", "## Example", "## Instead"):
        assert heading in explained.stdout
    assert explained.stdout.startswith(f"{code}: ")
    assert "docs/rules.md" in explained.stdout.splitlines()[-1]


def test_an_unknown_code_is_refused_with_the_nearest(tmp_path: Path) -> None:
    done = run_cli("explain", "step.missing_dependecy")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("lwtool: no finding has the code 'step.missing_dependecy'; did "
                           "you mean step.missing_dependency, code.missing_entrypoint?\n")
    nothing = run_cli("explain", "zzz")
    assert nothing.returncode == 2 and "docs/rules.md lists every code" in nothing.stderr


def test_validate_with_no_path_reads_the_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "broken.lwir.yaml").write_text(BROKEN)
    (tmp_path / "ok.lwir.yaml").write_text((ROOT / "examples" / "refine-loop.lwir.yaml")
                                           .read_text())
    os.symlink("..", tmp_path / "sub" / "up")  # a link back up: not followed
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert {line.split(":")[0] for line in done.stdout.splitlines()} == {
        "sub/broken.lwir.yaml"}
    assert run_cli("validate", "ok.lwir.yaml", cwd=tmp_path).returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run_cli("validate", cwd=empty)
    assert none.returncode == 2 and "no workflow files in ." in none.stderr


def test_json_help_says_what_it_prints() -> None:
    for command, words in (("events", "JSON lines"), ("report", "One JSON document"),
                           ("runs", "One JSON array"), ("verify", "One JSON document")):
        shown = run_cli(command, "--help", env={"COLUMNS": "200"}).stdout
        assert words in shown, (command, shown)
    assert "name.lwir.lock.json" in run_cli("lock", "--help", env={"COLUMNS": "200"}).stdout

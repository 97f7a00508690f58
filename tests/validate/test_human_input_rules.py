"""The validator knows human.input (an lwtool extension step type): its `with` takes a
prompt template and a schema in LWIR's schema subset; the fields of other step types
are findings; its prompt's expressions are checked like any other."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

HEAD = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: x}
permissions: {tools: [t]}
steps:
  - {id: a, uses: tool.call, with: {tool: t}}
"""


def _findings(tmp_path: Path, steps: str) -> list[tuple[str, str]]:
    (tmp_path / "f.lwir.yaml").write_text(HEAD + steps)
    done = run_cli("validate", "f.lwir.yaml", "--format", "json", cwd=tmp_path)
    found = json.loads(done.stdout)["files"][0]["findings"]
    return [(f["code"], f["pointer"]) for f in found]


def test_a_human_input_step_is_valid(tmp_path: Path) -> None:
    assert _findings(tmp_path, """\
  - id: ask
    uses: human.input
    needs: [a]
    with: {prompt: "Go on with {{ steps.a.output }}?", schema: {type: boolean}}
""") == []


def test_its_schema_must_be_in_the_subset(tmp_path: Path) -> None:
    assert _findings(tmp_path, """\
  - id: ask
    uses: human.input
    with: {prompt: "Email?", schema: {type: string, format: email}}
""") == [("schema.invalid", "/steps/1/with/schema/format")]


def test_prompt_and_schema_are_required_and_others_refused(tmp_path: Path) -> None:
    found = _findings(tmp_path, """\
  - id: ask
    uses: human.input
    output: {mode: text}
    with: {prompt: "Go?"}
""")
    assert ("lwir.invalid_field", "/steps/1/output") in found
    assert ("lwir.invalid_field", "/steps/1/with") in found  # no schema


def test_its_prompt_expressions_are_checked(tmp_path: Path) -> None:
    found = _findings(tmp_path, """\
  - id: ask
    uses: human.input
    with: {prompt: "Go on with {{ steps.nope.output }}?", schema: {type: boolean}}
""")
    assert [code for code, _ in found] == ["step.missing_dependency"]

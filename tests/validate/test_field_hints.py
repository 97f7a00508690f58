"""Findings that say what to write: the nearest field name for a misspelt one, "indent
it under `with:`" for a field of a step's `with` written one level too high, and "quote
the expression" for `{{ }}` that YAML read as nested mappings."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli

MISPLACED = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: x}
permissions: {tools: [t], models: [m]}
steps:
  - id: a
    uses: tool.call
    tool: t
  - id: b
    uses: tool.call
    need: [a]
    with: {tool: t}
  - id: c
    uses: tool.call
    with: {tool: t, arg: {}}
    needs: [b]
  - id: d
    uses: ai.generate
    needs: [c]
    model: m
    with: {model: m, prompt: hi}
metdata: {}
"""


def _messages(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "f.lwir.yaml").write_text(text)
    done = run_cli("validate", "f.lwir.yaml", "--format", "json", cwd=tmp_path)
    import json

    return [f["message"] for f in json.loads(done.stdout)["files"][0]["findings"]]


def test_misplaced_and_misspelt_fields_say_what_to_write(tmp_path: Path) -> None:
    messages = _messages(tmp_path, MISPLACED)
    assert "field 'tool' belongs in the step's `with`: indent it under `with:` (a " \
        "tool.call step's `with` takes args, tool)" in messages
    assert "unknown field 'need'; did you mean 'needs'?" in messages
    assert "unknown field 'arg'; did you mean 'args'?" in messages
    assert "unknown field 'metdata'; did you mean 'metadata'?" in messages
    assert any(m.startswith("field 'model' belongs in the step's `with`") for m in messages)
    assert "unknown field 'zzz'" in _messages(tmp_path, MISPLACED.replace("metdata", "zzz"))


def test_an_unquoted_expression_is_told_to_be_quoted(tmp_path: Path) -> None:
    text = MISPLACED.split("  - id: b")[0].replace("    tool: t\n",
                                                   "    with: {tool: t, args: {{ input.x }}}\n")
    assert _messages(tmp_path, text) == [
        '{{ input.x }} without quotes is read by YAML as nested mappings: quote the '
        'expression ("{{ input.x }}")']

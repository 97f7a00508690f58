"""`lwtool validate --portable`: each lwtool extension a file uses is a
`portable.extension` warning at its place (exit 0: the file is valid); the spec's own
examples use none."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, run_cli

FLOW = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: p}
permissions: {tools: [t]}
steps:
  - id: a
    uses: tool.call
    timeoutMs: 5000
    retry: {maxAttempts: 2}
    with: {tool: t}
    input: {x: "{{ upper(input.name) }}", y: "{{ sha256(input.name) }}"}
  - {id: ask, uses: human.input, needs: [a], with: {prompt: "ok?", schema: {type: string}}}
  - id: code
    uses: code.run
    needs: [a]
    with:
      entrypoint: m.ts
      files: {m.ts: {content: "export async function run() { return 1 }"}}
      sandbox: {network: deny, env: deny, fs: deny, memoryMb: 256}
"""
DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: d
models: [{id: w, model: openai/gpt-4o-mini}]
planner: {model: w}
runtime: {budget: {maxTokens: 1000}}
"""


def _found(path: Path) -> list[tuple[str, int, str]]:
    done = run_cli("validate", str(path), "--portable", "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    return [(f["code"], f["line"], f["message"].split(" is an lwtool extension")[0])
            for f in json.loads(done.stdout)["files"][0]["findings"]]


def test_each_extension_is_a_warning_at_its_place(tmp_path: Path) -> None:
    (tmp_path / "p.lwir.yaml").write_text(FLOW)
    assert _found(tmp_path / "p.lwir.yaml") == [
        ("portable.extension", 8, "a step's `timeoutMs`"),
        ("portable.extension", 9, "a step's `retry`"),
        ("portable.extension", 11, "the expression function `upper`"),
        ("portable.extension", 12, "the human.input step"),
        ("portable.extension", 19, "the sandbox limit `memoryMb`")]
    (tmp_path / "d.definition.yaml").write_text(DEFINITION)
    assert _found(tmp_path / "d.definition.yaml") == [
        ("portable.extension", 6, "`runtime`")]
    plain = run_cli("validate", str(tmp_path / "p.lwir.yaml"))
    assert plain.returncode == 0 and "portable.extension" not in plain.stdout


def test_the_specs_own_examples_are_portable() -> None:
    folder = ROOT / "tests" / "conformance" / "spec_examples"  # copied from the spec
    done = run_cli("validate", str(folder), "--portable")
    assert done.returncode == 0 and "portable.extension" not in done.stdout, done.stdout

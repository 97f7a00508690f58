"""`lwtool validate --check-code`: deno check errors at their place in the file (JSON
strings with escapes, YAML blocks); the default validate path never starts Deno."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from tests.conftest import ROOT, run_cli

SPEC = ROOT / "tests" / "conformance" / "spec_examples"
BAD = 'export async function run({ input }) {\n  const n: number = "x";\n  return n;\n}\n'


def _json_doc(folder: Path) -> Path:
    doc = json.loads((SPEC / "code-run-fixer.lwir.json").read_text())
    file = doc["steps"][0]["with"]["files"]["score.ts"]
    file["content"] = BAD
    file["sha256"] = "sha256:" + hashlib.sha256(BAD.encode()).hexdigest()
    path = folder / "bad.lwir.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _yaml_doc(folder: Path) -> Path:
    block = "".join(f"            {line}\n" for line in BAD.splitlines())
    path = folder / "bad.lwir.yaml"
    path.write_text(
        "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: y}\n"
        "permissions: {tools: [], models: []}\nsteps:\n  - id: c\n    uses: code.run\n"
        "    with:\n      entrypoint: main.ts\n      files:\n        main.ts:\n"
        f"          content: |\n{block}"
        f"          sha256: \"sha256:{hashlib.sha256(BAD.encode()).hexdigest()}\"\n"
        "      sandbox: {network: deny, env: deny, fs: deny}\n")
    return path


def test_type_errors_point_into_the_source(tmp_path: Path) -> None:
    json_doc, yaml_doc = _json_doc(tmp_path), _yaml_doc(tmp_path)
    plain = run_cli("validate", str(json_doc), str(yaml_doc))
    assert plain.returncode == 0, plain.stdout  # valid LWIR: types are not looked at
    result = run_cli("validate", "--check-code", str(json_doc), str(yaml_doc),
                     "--format", "json")
    assert result.returncode == 1, result.stderr
    reports = json.loads(result.stdout)["files"]
    assert [r["valid"] for r in reports] == [False, False]
    text = json.dumps([f for r in reports for f in r["findings"]])
    assert text.count("code.type_error") == 2 and "TS2322" in text
    lines = run_cli("validate", "--check-code", str(json_doc), str(yaml_doc)).stdout
    line = json_doc.read_text().splitlines().index(
        next(x for x in json_doc.read_text().splitlines() if '"content"' in x)) + 1
    column = json_doc.read_text().splitlines()[line - 1].index('const n') + len("const ") + 1
    assert f"bad.lwir.json:{line}:{column}: error code.type_error TS2322" in lines
    assert "bad.lwir.yaml:14:23: error code.type_error TS2322" in lines


def test_the_spec_examples_type_check(tmp_path: Path) -> None:
    for name in ("code-run-filter.lwir.json", "code-run-fixer.lwir.json"):
        shutil.copy(SPEC / name, tmp_path / name)
    result = run_cli("validate", "--check-code", *(str(p) for p in tmp_path.iterdir()))
    assert result.returncode == 0, result.stdout + result.stderr

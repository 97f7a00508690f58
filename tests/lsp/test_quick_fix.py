"""The add-a-missing-need quick fix, on every way a step can be written."""

from __future__ import annotations

import json

import pytest

from lwtool.lsp.analysis import Analysis
from lwtool.lsp.quick_fix import missing_need_fix
from tests.conftest import MINIMAL_HEADER

HEADER = "".join(f"{k}: {json.dumps(v)}\n" for k, v in MINIMAL_HEADER.items())
READ = '"{{ steps.a.output }}"'


def _apply(text: str, name: str) -> str:
    analysis = Analysis.of(text, name)
    [finding] = [f for f in analysis.findings if f.code == "step.missing_dependency"]
    fix = missing_need_fix(analysis, finding.span.start)
    assert fix is not None
    title, insert = fix
    assert title == "Add 'a' to the needs of 'b'"
    offset = analysis.offset(insert.at)
    return text[:offset] + insert.text + text[offset:]


@pytest.mark.parametrize("step_b", [
    "  - id: b\n    uses: tool.call\n    with: {tool: t}\n    input: " + READ + "\n",
    "  - {id: b, uses: tool.call, with: {tool: t}, input: " + READ + "}\n",
    "  - id: b\n    uses: tool.call\n    needs: [c]\n    with: {tool: t}\n    input: "
    + READ + "\n",
    "  - id: b\n    uses: tool.call\n    needs: []\n    with: {tool: t}\n    input: " + READ + "\n",
    "  - id: b\n    uses: tool.call\n    needs:\n      - c\n    with: {tool: t}\n    input: "
    + READ + "\n",
])
def test_yaml_shapes(step_b: str) -> None:
    text = (HEADER + "steps:\n  - {id: a, uses: tool.call, with: {tool: t}}\n"
            "  - {id: c, uses: tool.call, with: {tool: t}}\n" + step_b)
    fixed = _apply(text, "flow.yaml")
    assert Analysis.of(fixed, "flow.yaml").findings == [], fixed


@pytest.mark.parametrize("needs", [None, [], ["c"]])
def test_json(needs: list[str] | None) -> None:
    b = {"id": "b", "uses": "tool.call", "with": {"tool": "t"}, "input": "{{ steps.a.output }}"}
    if needs is not None:
        b = {"id": "b", "needs": needs, **{k: v for k, v in b.items() if k != "id"}}
    doc = {**MINIMAL_HEADER, "steps": [
        {"id": "a", "uses": "tool.call", "with": {"tool": "t"}},
        {"id": "c", "uses": "tool.call", "with": {"tool": "t"}}, b]}
    text = json.dumps(doc, indent=2)
    fixed = _apply(text, "flow.json")
    assert Analysis.of(fixed, "flow.json").findings == [], fixed


def _permit(text: str, name: str, code: str) -> str:
    from lwtool.lsp.quick_fix import missing_permission_fix

    analysis = Analysis.of(text, name)
    [finding] = [f for f in analysis.findings if f.code == code]
    fix = missing_permission_fix(analysis, finding.message)
    assert fix is not None, finding.message
    title, insert = fix
    offset = analysis.offset(insert.at)
    return text[:offset] + insert.text + text[offset:]


STEPS = ("steps:\n  - {id: a, uses: tool.call, with: {tool: fetch}}\n"
         "  - {id: b, uses: ai.generate, with: {model: fast, prompt: hi}}\n")


@pytest.mark.parametrize("permissions", [
    "permissions: {models: [], tools: [t]}\n",
    "permissions: {tools: [t]}\n",
    "permissions:\n  tools:\n    - t\n  models:\n    - m\n",
    "permissions:\n  secrets: []\n",
    "permissions: {models: [m]}\n",
])
def test_permission_shapes_in_yaml(permissions: str) -> None:
    text = ("apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: t}\n"
            + permissions + STEPS)
    for code in ("permissions.unknown_tool", "permissions.unknown_model"):
        text = _permit(text, "flow.yaml", code)
    assert Analysis.of(text, "flow.yaml").findings == [], text


@pytest.mark.parametrize("permissions", [{"tools": ["t"]}, {"tools": [], "models": []},
                                         {"secrets": []}])
def test_permission_shapes_in_json(permissions: dict[str, list[str]]) -> None:
    doc = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
           "metadata": {"name": "t"}, "permissions": permissions, "steps": [
               {"id": "a", "uses": "tool.call", "with": {"tool": "fetch"}},
               {"id": "b", "uses": "ai.generate", "with": {"model": "fast", "prompt": "hi"}}]}
    text = json.dumps(doc, indent=2)
    for code in ("permissions.unknown_tool", "permissions.unknown_model"):
        text = _permit(text, "flow.json", code)
    assert Analysis.of(text, "flow.json").findings == [], text
    assert json.loads(text)["permissions"]["tools"][-1] == "fetch"


def test_no_permission_fix_for_another_message() -> None:
    from lwtool.lsp.quick_fix import missing_permission_fix

    analysis = Analysis.of("apiVersion: x\n", "x.yaml")
    assert missing_permission_fix(analysis, "step 'a' needs 'b', which is not a step") is None

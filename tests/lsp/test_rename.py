"""Renaming a step id renames every place that names it, in YAML and JSON, and refuses
names that are not ids or are taken; through the language server too."""

from __future__ import annotations

import json

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lwtool.lsp.analysis import Analysis, rename_problem
from lwtool.source.position import Pos
from tests.lsp.conftest import open_document

YAML = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: r}
permissions: {tools: [t]}
steps:
  - id: fetch
    uses: tool.call
    maxVisits: 3
    with: {tool: t}
  - id: check
    uses: tool.call
    maxVisits: 3
    needs: [fetch]
    with: {tool: t}
    input: {a: "{{ steps.fetch.lastOutput }}", b: "x {{ steps['fetch'].lastOutput }} y"}
  - id: route
    uses: decision
    needs:
      - check
      - fetch
    with:
      cases:
        - when: "{{ steps.fetch.lastOutput == 1 }}"
          to: fetch
      default: end
  - id: fetcher
    uses: parallel
    needs: [route]
    with:
      items: "{{ [1, 2] }}"
      maxBranches: 2
      maxConcurrency: 2
      fanIn: {outputStep: fetch}
    steps:
      - id: fetch
        uses: tool.call
        with: {tool: t}
"""


def _renamed(text: str, path: str, at: str, nth: int, new: str) -> str:
    analysis = Analysis.of(text, path)
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(at, offset + 1)
    named = analysis.step_named_at(offset + at.index("fetch") + 1)  # inside the word
    assert named is not None, at
    spans = analysis.rename_spans(named[0])
    assert spans is not None
    for span in sorted(spans, reverse=True):
        start, end = analysis.offset(span.start), analysis.offset(span.end)
        assert text[start:end] == named[0].id
        text = text[:start] + new + text[end:]
    return text


@pytest.mark.parametrize(("at", "nth"), [("id: fetch", 0), ("steps.fetch", 0),
                                         ("to: fetch", 0), ("- fetch", 0)])
def test_renaming_from_any_place_renames_every_place(at: str, nth: int) -> None:
    renamed = _renamed(YAML, "r.lwir.yaml", at, nth, "load")
    assert Analysis.of(renamed, "r.lwir.yaml").findings == [], renamed
    top = renamed.split("    steps:")[0].replace("fanIn: {outputStep: fetch}", "")
    assert "fetch" not in top.replace("fetcher", "")  # every top-level fetch renamed
    assert renamed.split("    steps:")[1].count("id: fetch") == 1  # the body's own fetch kept
    assert "steps['load'].lastOutput" in renamed and "fanIn: {outputStep: fetch}" in renamed


def test_the_body_step_renames_its_fan_in_not_the_outer_step() -> None:
    renamed = _renamed(YAML, "r.lwir.yaml", "id: fetch\n", 1, "grab")
    assert Analysis.of(renamed, "r.lwir.yaml").findings == [], renamed
    assert "fanIn: {outputStep: grab}" in renamed and "id: grab" in renamed
    assert renamed.count("steps.fetch") == 2  # the outer step's readers untouched


def test_json() -> None:
    doc = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
           "metadata": {"name": "r"}, "permissions": {"tools": ["t"]}, "steps": [
               {"id": "fetch", "uses": "tool.call", "with": {"tool": "t"}},
               {"id": "use", "uses": "tool.call", "needs": ["fetch"],
                "with": {"tool": "t"}, "input": {"v": "{{ steps.fetch.output }}"}}]}
    text = json.dumps(doc, indent=2)
    renamed = _renamed(text, "r.lwir.json", '"fetch"', 0, "load")
    assert Analysis.of(renamed, "r.lwir.json").findings == []
    value = json.loads(renamed)
    assert value["steps"][0]["id"] == "load" and value["steps"][1]["needs"] == ["load"]
    assert value["steps"][1]["input"]["v"] == "{{ steps.load.output }}"


def test_names_that_cannot_be_ids_or_are_taken_are_refused() -> None:
    analysis = Analysis.of(YAML, "r.lwir.yaml")
    named = analysis.step_named_at(YAML.index("id: fetch") + 5)
    assert named is not None
    target = named[0]
    assert rename_problem(analysis, target, "load") is None
    assert "is not a step id" in str(rename_problem(analysis, target, "9lives"))
    assert "exists already" in str(rename_problem(analysis, target, "check"))
    assert "ends a scope" in str(rename_problem(analysis, target, "end"))


def test_nothing_to_rename_off_a_step_id() -> None:
    analysis = Analysis.of(YAML, "r.lwir.yaml")
    assert analysis.step_named_at(YAML.index("uses: tool.call") + 8) is None
    assert analysis.step_named_at(analysis.offset(Pos(1, 3))) is None




async def test_rename_through_the_server(client: LanguageClient) -> None:
    uri = "file:///work/r.lwir.yaml"
    open_document(client, YAML, uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    line = YAML.splitlines().index("    needs: [fetch]")
    position = types.Position(line=line, character=len("    needs: [f"))
    prepared = await client.text_document_prepare_rename_async(types.PrepareRenameParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position))
    assert isinstance(prepared, types.PrepareRenamePlaceholder)
    assert prepared.placeholder == "fetch"
    assert (prepared.range.start.character, prepared.range.end.character) == (12, 17)
    edit = await client.text_document_rename_async(types.RenameParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=position,
        new_name="load"))
    assert edit is not None and len(edit.changes[uri]) == 7
    with pytest.raises(Exception, match="exists already"):
        await client.text_document_rename_async(types.RenameParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position,
            new_name="check"))


def test_a_step_hover_says_what_it_receives() -> None:
    """Hover on a step id shows its input: `input`, `with.args`, the current item in a
    parallel body, else the workflow input with its schema's shape."""
    text = YAML.replace("kind: Workflow\n", "kind: Workflow\ninput:\n  schema: {type: object, "
                        "required: [seed], properties: {seed: {type: string}, n: {}}}\n")
    analysis = Analysis.of(text, "r.lwir.yaml")

    def hover(at: str) -> str:
        found = analysis.hover(text.index(at) + len("- id: ") + 1)
        assert found is not None, at
        return found[0]

    assert "input: the workflow input, an object with n, seed (required: seed)" in \
        hover("- id: fetch\n")
    assert 'input: its `input`, `{"a": "{{ steps.fetch.lastOutput }}"' in hover("- id: check")
    body = text.index("id: fetch\n", text.index("id: fetcher"))
    found = analysis.hover(body + len("id: ") + 1)
    assert found is not None and "input: the current item of `fetcher` (one of `{{ [1, 2] }}`)" \
        in found[0]
    assert "input:" not in hover("- id: fetcher")  # a parallel step hands items out

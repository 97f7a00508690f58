"""`{{ expressions }}` inside YAML and JSON strings as semantic tokens: delimiters, roots,
member and function names, literals, each at its exact place."""

from __future__ import annotations

import json

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lwtool.lsp.analysis import TOKEN_TYPES, Analysis
from tests.conftest import MINIMAL_HEADER
from tests.lsp.conftest import open_document

HEADER = "".join(f"{k}: {json.dumps(v)}\n" for k, v in MINIMAL_HEADER.items())
YAML = HEADER + """steps:
  - {id: a, uses: tool.call, with: {tool: t}}
  - id: b
    uses: tool.call
    needs: [a]
    with: {tool: t}
    input: {n: "😀 {{ length(steps.a.output) > 2 }}", s: '{{ input["k"] }} {{ null }}'}
"""


def _shown(text: str, path: str) -> list[tuple[str, str]]:
    analysis = Analysis.of(text, path)
    lines = text.split("\n")
    return [(lines[span.start.line - 1][span.start.column - 1:span.end.column - 1], kind)
            for span, kind in analysis.expression_tokens()]


def test_yaml_tokens_in_order() -> None:
    assert Analysis.of(YAML, "t.lwir.yaml").findings == []
    assert _shown(YAML, "t.lwir.yaml") == [
        ("{{", "macro"), ("length", "function"), ("steps", "variable"), ("a", "property"),
        ("output", "property"), ("2", "number"), ("}}", "macro"),
        ("{{", "macro"), ("input", "variable"), ('"k"', "string"), ("}}", "macro"),
        ("{{", "macro"), ("null", "keyword"), ("}}", "macro")]


def test_json_tokens() -> None:
    doc = {**MINIMAL_HEADER, "steps": [
        {"id": "a", "uses": "tool.call", "with": {"tool": "t"}},
        {"id": "b", "uses": "tool.call", "needs": ["a"], "with": {"tool": "t"},
         "input": {"v": "{{ steps.a.output }}"}}]}
    text = json.dumps(doc, indent=2)
    assert _shown(text, "t.lwir.json") == [
        ("{{", "macro"), ("steps", "variable"), ("a", "property"), ("output", "property"),
        ("}}", "macro")]


def test_no_tokens_without_expressions_or_structure() -> None:
    assert _shown(HEADER + "steps: []\n", "t.lwir.yaml") == []
    assert _shown("{ not yaml", "t.lwir.yaml") == []




async def test_tokens_through_the_server(client: LanguageClient) -> None:
    uri = "file:///work/t.lwir.yaml"
    open_document(client, YAML, uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    result = await client.text_document_semantic_tokens_full_async(
        types.SemanticTokensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    data = result.data
    decoded, line, char = [], 0, 0
    for i in range(0, len(data), 5):
        line += data[i]
        char = data[i + 1] if data[i] else char + data[i + 1]
        decoded.append((line, char, data[i + 2], TOKEN_TYPES[data[i + 3]]))
    row = YAML.split("\n").index(
        '    input: {n: "😀 {{ length(steps.a.output) > 2 }}", s: \'{{ input["k"] }} {{ null }}\'}')
    source = YAML.split("\n")[row]
    # LSP columns count UTF-16 units: the emoji before them is two.
    assert decoded[0] == (row, source.index("{{") + 1, 2, "macro")
    assert decoded[1] == (row, source.index("length") + 1, 6, "function")
    assert [t[3] for t in decoded].count("macro") == 6

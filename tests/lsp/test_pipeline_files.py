"""Pipeline and definition files in the editor: go to definition on a pipeline's
`workflows:` entry (or a definition's `planner.plan`) opens that file; hover on a field
shows its description from the file's schema."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import ROOT
from tests.lsp.conftest import open_document


def _position(text: str, needle: str, line_of: str) -> types.Position:
    lines = text.split("\n")
    line = next(n for n, t in enumerate(lines) if line_of in t)
    return types.Position(line=line, character=lines[line].index(needle) + 1)


async def test_go_to_a_pipelines_workflow_and_hover_its_fields(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    for name in ("numbers.pipeline.yaml", "double.definition.yaml", "double.lwir.yaml"):
        shutil.copy(ROOT / "examples" / "pipeline" / name, tmp_path / name)
    pipeline = tmp_path / "numbers.pipeline.yaml"
    text = pipeline.read_text()
    open_document(client, text, pipeline.as_uri())
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    found = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=pipeline.as_uri()),
        position=_position(text, "double.definition.yaml", "workflows:")))
    assert isinstance(found, types.Location)
    assert found.uri == (tmp_path / "double.definition.yaml").as_uri()
    shown = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=pipeline.as_uri()),
        position=_position(text, "maxConcurrentSubRuns", "maxConcurrentSubRuns")))
    assert shown is not None and isinstance(shown.contents, types.MarkupContent)
    assert shown.contents.value.startswith("**maxConcurrentSubRuns**: How many sub-runs")

    definition = tmp_path / "double.definition.yaml"
    text = definition.read_text()
    open_document(client, text, definition.as_uri())
    found = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=definition.as_uri()),
        position=_position(text, "double.lwir.yaml", "plan:")))
    assert isinstance(found, types.Location)
    assert found.uri == (tmp_path / "double.lwir.yaml").as_uri()
    shown = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=definition.as_uri()),
        position=_position(text, "plan: double", "planner:")))
    assert shown is not None and "A fixed plan" in shown.contents.value  # type: ignore[union-attr]

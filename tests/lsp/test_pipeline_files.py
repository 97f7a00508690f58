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


async def _goes_and_hovers(client: LanguageClient, path: Path, link: tuple[str, str],
                           field: tuple[str, str]) -> tuple[str, str]:
    """Open `path`; (the URI go to definition at `link` gives, the hover text at
    `field`): each a (needle, a text of its line)."""
    text = path.read_text()
    open_document(client, text, path.as_uri())
    found = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=_position(text, *link)))
    assert isinstance(found, types.Location)
    shown = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=_position(text, *field)))
    assert shown is not None and isinstance(shown.contents, types.MarkupContent)
    return found.uri, shown.contents.value


async def test_go_to_a_pipelines_workflow_and_hover_its_fields(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    for name in ("numbers.pipeline.yaml", "double.definition.yaml", "double.lwir.yaml"):
        shutil.copy(ROOT / "examples" / "pipeline" / name, tmp_path / name)
    uri, hover = await _goes_and_hovers(
        client, tmp_path / "numbers.pipeline.yaml", ("double.definition.yaml", "workflows:"),
        ("maxConcurrentSubRuns", "maxConcurrentSubRuns"))
    assert uri == (tmp_path / "double.definition.yaml").as_uri()
    assert hover.startswith("**maxConcurrentSubRuns**: How many sub-runs")
    uri, hover = await _goes_and_hovers(
        client, tmp_path / "double.definition.yaml", ("double.lwir.yaml", "plan:"),
        ("plan: double", "planner:"))
    assert uri == (tmp_path / "double.lwir.yaml").as_uri()
    assert "A fixed plan" in hover


async def test_a_pipelines_workflows_are_found_beside_it_whatever_the_servers_folder(
        client: LanguageClient, tmp_path: Path) -> None:
    """The server runs in the repository's root (as editors start it, in the workspace),
    the pipeline in a folder of its own: its entries are read relative to it."""
    for name in ("numbers.pipeline.yaml", "double.definition.yaml", "double.lwir.yaml"):
        shutil.copy(ROOT / "examples" / "pipeline" / name, tmp_path / name)
    pipeline = tmp_path / "numbers.pipeline.yaml"
    text = pipeline.read_text()
    broken = tmp_path / "broken.pipeline.yaml"
    broken.write_text(text.replace("double.definition.yaml", "gone.definition.yaml"))
    for path in (pipeline, broken):
        open_document(client, path.read_text(), path.as_uri())
    while broken.as_uri() not in client.diagnostics or pipeline.as_uri() not in \
            client.diagnostics:
        await client.wait_for_notification("textDocument/publishDiagnostics")
    assert [d.code for d in client.diagnostics[pipeline.as_uri()]] == []
    assert [d.code for d in client.diagnostics[broken.as_uri()]] == [
        "pipeline.invalid_workflow"]


async def test_an_invoked_child_is_linked_and_checked_in_the_editor(
        client: LanguageClient, tmp_path: Path) -> None:
    """Go to definition on a workflow.invoke's `with.workflow` opens the child file; a
    child that is missing is a diagnostic at the entry (read beside the document)."""
    (tmp_path / "compose").mkdir()
    shutil.copy(ROOT / "examples" / "refine-loop.lwir.yaml", tmp_path / "refine-loop.lwir.yaml")
    parent = tmp_path / "compose" / "polish-all.lwir.yaml"
    shutil.copy(ROOT / "examples" / "compose" / "polish-all.lwir.yaml", parent)
    text = parent.read_text()
    open_document(client, text, parent.as_uri())
    found = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=parent.as_uri()),
        position=_position(text, "refine-loop", "workflow: ../refine-loop")))
    assert isinstance(found, types.Location)
    assert found.uri == (tmp_path / "refine-loop.lwir.yaml").as_uri()
    broken = tmp_path / "compose" / "broken.lwir.yaml"
    broken.write_text(text.replace("../refine-loop.lwir.yaml", "../gone.lwir.yaml"))
    open_document(client, broken.read_text(), broken.as_uri())
    while broken.as_uri() not in client.diagnostics:
        await client.wait_for_notification("textDocument/publishDiagnostics")
    assert [d.code for d in client.diagnostics[broken.as_uri()]] == ["invoke.child_invalid"]

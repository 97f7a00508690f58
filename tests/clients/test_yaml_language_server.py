"""schemas/lwir.schema.json in a schema-driven editor nobody here wrote:
yaml-language-server (npm, pinned in tests/clients/package.json) over stdio.

Skipped, with the reason, only where node is absent; `scripts/bootstrap.sh` installs the
server where npm is present, and `.ci/run` provides node and npm."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).parent / "node_modules" / "yaml-language-server" / "bin" / \
    "yaml-language-server"
SCHEMA = (ROOT / "schemas" / "lwir.schema.json").as_uri()
NODE = shutil.which("node")
_opened = iter(range(1_000_000))
SETTINGS = {"schemas": {SCHEMA: "*.lwir.yaml"}, "validate": True, "hover": True,
            "completion": True, "schemaStore": {"enable": False}}

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed, so "
                                "yaml-language-server cannot run (.ci/run installs it)")

HEAD = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: review}
permissions: {models: [gpt-4o-mini], tools: [fetch]}
steps:
"""


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[NODE or "node", str(SERVER), "--stdio"]))
async def yls(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await _start(lsp_client, SETTINGS)
    yield
    await lsp_client.shutdown_session()


async def _start(client: LanguageClient, settings: dict[str, Any]) -> None:
    """Start the server with these `yaml` settings."""
    if not SERVER.exists():
        pytest.fail(f"{SERVER} is missing: run `npm ci --prefix tests/clients` "
                    "(scripts/bootstrap.sh does where npm is present)")
    client.set_configuration(settings, section="yaml")
    client.feature(types.CLIENT_REGISTER_CAPABILITY)(lambda params: None)
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri="file:///work"))
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"yaml": settings}))


async def _open(client: LanguageClient, text: str) -> tuple[str, list[types.Diagnostic]]:
    """Open the text as a new document (a server keeps the first text of a URI it has
    open); its URI and diagnostics."""
    uri = f"file:///work/doc{next(_opened)}.lwir.yaml"
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                             text=text)))
    while uri not in client.diagnostics:
        await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri, list(client.diagnostics[uri])


async def _labels(client: LanguageClient, text: str, marker: str = "|") -> list[str]:
    """Completion labels at the marker (which is removed from the text)."""
    index = text.index(marker)
    line = text[:index].count("\n")
    character = index - (text.rfind("\n", 0, index) + 1)
    uri, _ = await _open(client, text.replace(marker, "", 1))
    result: Any = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character)))
    items = result.items if isinstance(result, types.CompletionList) else result or []
    return [item.label for item in items]


async def test_step_keys_follow_the_step_type(yls: LanguageClient) -> None:
    labels = await _labels(yls, HEAD + "  - id: get\n    uses: tool.call\n    with: {tool: fetch}"
                           "\n    |\n")
    assert {"needs", "input", "output", "retry", "timeoutMs", "maxVisits"} <= set(labels)
    assert "onFailure" not in labels and "steps" not in labels
    assert "id" not in labels and "uses" not in labels and "with" not in labels  # present
    assert len(labels) == len(set(labels)), labels
    assert "cache" not in labels  # reserved: valid, not suggested
    assert "sensitive" in labels  # honoured now: suggested


async def test_decision_and_parallel_keys(yls: LanguageClient) -> None:
    decision = await _labels(yls, HEAD + "  - id: route\n    uses: decision\n    |\n")
    assert "with" in decision
    assert not {"input", "output", "retry", "onFailure", "steps"} & set(decision)
    parallel = await _labels(yls, HEAD + "  - id: fan\n    uses: parallel\n    |\n")
    assert {"with", "steps"} <= set(parallel)
    assert not {"input", "output", "onFailure"} & set(parallel)


async def test_with_keys_of_a_code_run_step(yls: LanguageClient) -> None:
    labels = await _labels(yls, HEAD + "  - id: code\n    uses: code.run\n    with:\n      |\n")
    assert {"entrypoint", "files", "sandbox", "args"} <= set(labels)
    assert "model" not in labels and "tool" not in labels


async def test_uses_offers_the_step_types(yls: LanguageClient) -> None:
    labels = await _labels(yls, HEAD + "  - id: s\n    uses: |\n")
    assert {"ai.generate", "tool.call", "code.run", "decision", "parallel"} <= set(labels)


async def test_hover_shows_the_description(yls: LanguageClient) -> None:
    text = HEAD + "  - id: get\n    uses: tool.call\n    maxVisits: 2\n    with: {tool: fetch}\n"
    uri, _ = await _open(yls, text)
    line = text.splitlines().index("    maxVisits: 2")
    hover = await yls.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=6)))
    assert hover is not None
    contents = hover.contents
    value = contents.value if isinstance(contents, types.MarkupContent) else str(contents)
    assert "back-edge" in value, value


async def test_a_field_of_another_type_is_a_diagnostic(yls: LanguageClient) -> None:
    text = HEAD + ("  - id: get\n    uses: tool.call\n    with: {tool: fetch}\n"
                   "    onFailure: {fixer: {model: gpt-4o-mini}}\n")
    _, diagnostics = await _open(yls, text)
    line = text.splitlines().index("    onFailure: {fixer: {model: gpt-4o-mini}}")
    assert [d.range.start.line for d in diagnostics] == [line], diagnostics


async def test_a_valid_workflow_has_no_diagnostics(yls: LanguageClient) -> None:
    text = (ROOT / "examples" / "candidate-review.lwir.yaml").read_text()
    assert (await _open(yls, text))[1] == []


async def test_a_bad_step_type_is_one_diagnostic(yls: LanguageClient) -> None:
    text = HEAD + "  - id: get\n    uses: tool.cal\n    with: {tool: fetch}\n"
    _, diagnostics = await _open(yls, text)
    line = text.splitlines().index("    uses: tool.cal")
    assert [(d.range.start.line, d.message.splitlines()[0]) for d in diagnostics] == [
        (line, 'Value is not accepted. Valid values: "ai.generate", "ai.agent", "tool.call", '
               '"code.run", "decision", "parallel", "human.input", "workflow.invoke", "map".')
    ], diagnostics


async def test_a_new_step_offers_fields_not_one_snippet_per_variant(
        yls: LanguageClient) -> None:
    labels = await _labels(yls, HEAD + "  - id: a\n    uses: tool.call\n    with: {tool: fetch}"
                           "\n  - |\n")
    assert "uses" in labels, labels
    assert not [label for label in labels if label.endswith(" step")], labels


EDITOR_SCHEMA = (ROOT / "schemas" / "editor" / "lwir.schema.json").as_uri()
EDITOR_SETTINGS = {**SETTINGS, "schemas": {EDITOR_SCHEMA: "*.lwir.yaml"}}


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[NODE or "node", str(SERVER), "--stdio"]))
async def yls_beside_lwtool(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """yaml-language-server as editors/README sets it up beside `lwtool lsp`: with the
    editor schema (schemas/editor/), for completion and hover only."""
    await _start(lsp_client, EDITOR_SETTINGS)
    yield
    await lsp_client.shutdown_session()


async def test_beside_lwtool_each_finding_comes_once(yls_beside_lwtool: LanguageClient,
                                                     tmp_path: Path) -> None:
    """A bad step type, a field of another type and an unknown field: yamlls with the
    editor schema reports none of them, lwtool reports each once; completion and hover
    still come from the schema."""
    text = HEAD + ("  - id: get\n    uses: tool.cal\n    with: {tool: fetch}\n"
                   "  - id: put\n    uses: tool.call\n    maxVisits: many\n    colour: red\n"
                   "    with: {tool: fetch}\n")
    _, diagnostics = await _open(yls_beside_lwtool, text)
    assert diagnostics == []
    (tmp_path / "doc.lwir.yaml").write_text(text)
    import json
    import subprocess
    import sys

    found = subprocess.run([sys.executable, "-m", "lwtool", "validate", "--format", "json",
                            str(tmp_path / "doc.lwir.yaml")], capture_output=True, text=True)
    lines = [(f["code"], f["line"]) for f in json.loads(found.stdout)["files"][0]["findings"]]
    assert sorted(set(lines)) == sorted(lines) and len(lines) >= 3, lines
    labels = await _labels(yls_beside_lwtool, HEAD + "  - id: get\n    uses: tool.call\n"
                           "    with: {tool: fetch}\n    |\n")
    assert {"needs", "input", "output", "retry", "timeoutMs", "maxVisits"} <= set(labels)
    assert "onFailure" not in labels and "steps" not in labels
    kinds = await _labels(yls_beside_lwtool, HEAD + "  - id: s\n    uses: |\n")
    assert {"ai.generate", "tool.call", "code.run", "decision", "parallel"} <= set(kinds)


def test_the_editor_schemas_are_current(tmp_path: Path) -> None:
    from lwtool.lsp.editor_schemas import NAMES, main

    main([str(tmp_path)])
    for name in NAMES:
        assert (tmp_path / name).read_text() == \
            (ROOT / "schemas" / "editor" / name).read_text(), \
            f"run: python -m lwtool.lsp.editor_schemas ({name} is stale)"

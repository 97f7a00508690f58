"""The language server's `portable` option (initializationOptions, as the VS Code
extension's `lwtool.portable` setting sends it): every use of an lwtool extension is a
`portable.extension` warning, from the first publish on; without it there are none."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.lsp.conftest import open_document

URI = "file:///work/ask.lwir.yaml"
TEXT = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: ask}
permissions: {tools: [t]}
steps:
  - id: ask
    uses: human.input
    with: {prompt: "Name?", schema: {type: string}}
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "lwtool",
                                                               "lsp"]))
async def portable(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri="file:///work",
        initialization_options={"portable": True}))
    yield
    await lsp_client.shutdown_session()


async def test_the_portable_option_warns_of_extensions(portable: LanguageClient) -> None:
    open_document(portable, TEXT, URI)
    await portable.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [found] = portable.diagnostics[URI]
    assert (found.code, found.severity, found.range.start.line) == (
        "portable.extension", types.DiagnosticSeverity.Warning, 6)
    assert found.message.startswith("the human.input step is an lwtool extension")
    portable.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text=TEXT + "  - {id: b, uses: tool.call, timeoutMs: 10, with: {tool: t}}\n")]))
    await portable.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in portable.diagnostics[URI]] == ["portable.extension"] * 2

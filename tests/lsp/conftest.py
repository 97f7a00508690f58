"""A real LSP client (pytest-lsp) talking to `lwtool lsp` over stdio, for every test
module here that asks for `client`; `open_document` sends a didOpen."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "lwtool",
                                                               "lsp"]))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri="file:///work"))
    yield
    await lsp_client.shutdown_session()


def open_document(client: LanguageClient, text: str, uri: str) -> None:
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)))

"""The early phase (lsp/early.py): `initialize` and the first diagnostics before pygls
loads, giving what the full server gives, and a take-over that sends nothing twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec
from pytest_lsp import LanguageClient, client_capabilities

from lwtool.lsp.early import client_column, initialize_result
from lwtool.lsp.server import server
from tests.conftest import ROOT
from tests.lsp.test_hostile_clients import RawClient, frame, request

TEXT = (ROOT / "examples" / "refine-loop.lwir.yaml").read_text().replace(
    "needs: [improve]", "needs: [improve, ünknown😀]")
URI = "file:///work/early.lwir.yaml"


def _pygls_result(capabilities: types.ClientCapabilities) -> Any:
    protocol = server.protocol
    steps: Iterator[Any] = protocol.lsp_initialize(types.InitializeParams(
        capabilities=capabilities))
    try:
        while True:
            next(steps)
    except StopIteration as stop:
        return json.loads(json.dumps(stop.value, default=protocol._serialize_message))


CLIENTS = [client_capabilities(name) for name in ("visual-studio-code", "neovim", "emacs")]
CLIENTS += [types.ClientCapabilities(), types.ClientCapabilities(
    general=types.GeneralClientCapabilities(position_encodings=["utf-32", "utf-8"]),
    text_document=types.TextDocumentClientCapabilities(
        synchronization=types.TextDocumentSyncClientCapabilities(will_save=True),
        rename=types.RenameClientCapabilities(prepare_support=False))),
    types.ClientCapabilities(general=types.GeneralClientCapabilities(
        position_encodings=["ucs-2"]))]


@pytest.mark.parametrize("capabilities", CLIENTS)
def test_the_early_initialize_result_is_pygls_s(capabilities: types.ClientCapabilities
                                                ) -> None:
    params = json.loads(json.dumps(capabilities, default=server.protocol._serialize_message))
    assert initialize_result({"capabilities": params}) == _pygls_result(capabilities)


@given(st.text(), st.integers(min_value=0, max_value=40),
       st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_columns_are_counted_as_pygls_counts_them(line: str, column: int,
                                                  encoding: str) -> None:
    expected = PositionCodec(encoding).position_to_client_units(
        [line], types.Position(line=0, character=column)).character
    assert client_column(line, column, encoding) == expected


@pytest.mark.parametrize("capabilities", [{}, {"general": {"positionEncodings": ["utf-8"]}}])
def test_early_diagnostics_are_the_full_server_s_and_nothing_is_sent_twice(
        capabilities: dict[str, Any]) -> None:
    client = RawClient(handshake=False)
    try:
        client.send(frame(request(1, "initialize", {"capabilities": capabilities})))
        client.send(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        client.send(frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": URI, "languageId": "yaml", "version": 1, "text": TEXT}}}))
        first = client.next_message()
        assert first["id"] == 1 and "capabilities" in first["result"]
        early = client.next_message()
        assert early["method"] == "textDocument/publishDiagnostics"
        assert {d["code"] for d in early["params"]["diagnostics"]} == {
            "step.missing_dependency"}
        # the take-over: a request the early phase does not serve, then the same text
        # again as a change, published by the full server
        client.send(frame(request(2, "textDocument/hover", {
            "textDocument": {"uri": URI}, "position": {"line": 0, "character": 1}})))
        client.send(frame({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": URI, "version": 2},
            "contentChanges": [{"text": TEXT}]}}))
        hover = client.next_message()
        assert hover["id"] == 2 and "result" in hover  # no second reply to initialize
        full = client.next_message()
        assert full["method"] == "textDocument/publishDiagnostics"
        assert full["params"]["version"] == 2
        assert full["params"]["diagnostics"] == early["params"]["diagnostics"]
        assert client.close() == 0
        assert client.messages.empty()
        stderr = client.process.stderr.read().decode() if client.process.stderr else ""
        assert "differs" not in stderr
    finally:
        if client.process.poll() is None:
            client.process.kill()


@pytest.mark.parametrize("params", [[], {"capabilities": 3}, None])
def test_an_initialize_the_early_phase_cannot_read_is_pygls_s_to_answer(params: Any) -> None:
    client = RawClient(handshake=False)
    try:
        client.send(frame(request(1, "initialize", params)))
        reply = client.reply(1)
        assert reply["error"]["code"] == -32602, reply
    finally:
        client.process.kill()
        client.process.wait()


async def test_a_real_client_sees_one_initialize_reply(client: LanguageClient) -> None:
    # the pytest-lsp session of tests/lsp/conftest.py went through the early phase
    result = await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=(ROOT / "examples" /
                                                        "refine-loop.lwir.yaml").as_uri())))
    assert result

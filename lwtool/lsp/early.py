"""The first moments of an LSP session, served before pygls and lsprotocol load (their
imports take ~300 ms, the validator's ~40 ms): `initialize` is answered and every
document the client opens gets its diagnostics at once.

The early phase ends at the first message it does not serve (any request but
`initialize`, any notification but `initialized` and `textDocument/didOpen`, anything
malformed), or once the client has been quiet for IDLE_SECONDS. Then lwtool.lsp.server
loads and takes over the session (`server.take_over`): the messages seen so far are
handled again (the reply to `initialize` is not sent twice, an opened document's
diagnostics are not published twice), then the unread stream.

The InitializeResult sent here is what pygls computes for lwtool's server given the
client's capabilities (position encoding, rename's prepareSupport, willSave);
tests/lsp/test_early.py holds the two equal, and the take-over logs a warning if they
ever differ.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any, BinaryIO

from lwtool._version import __version__
from lwtool.lsp.analysis import TOKEN_TYPES, Analysis, set_options
from lwtool.lsp.transport import FrameReader
from lwtool.source.finding import Finding, Severity

IDLE_SECONDS = 0.05
TRIGGER_CHARACTERS = [".", "[", " ", ","]
_ENCODINGS = ("utf-8", "utf-16", "utf-32")
_SEVERITY = {Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}


def initialize_result(params: Any) -> dict[str, Any] | None:
    """lwtool's InitializeResult for these `initialize` params, or None when they do not
    look like a well-formed request (pygls then answers it, with its own checks)."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return None
    client = params["capabilities"]
    encodings = _get(client, "general", "positionEncodings")
    encoding = next((e for e in encodings if e in _ENCODINGS), "utf-16") \
        if isinstance(encodings, list) else "utf-16"
    sync: dict[str, Any] = {"openClose": True, "change": 2, "save": False}
    for name in ("willSave", "willSaveWaitUntil"):
        if _get(client, "textDocument", "synchronization", name) is not None:
            sync[name] = False  # the client can, the server does not ask for it
    rename: Any = {"prepareProvider": True} \
        if _get(client, "textDocument", "rename", "prepareSupport") else True
    capabilities = {
        "positionEncoding": encoding,
        "textDocumentSync": sync,
        "completionProvider": {"triggerCharacters": TRIGGER_CHARACTERS},
        "hoverProvider": True,
        "definitionProvider": True,
        "documentSymbolProvider": True,
        "codeActionProvider": {"codeActionKinds": ["quickfix"]},
        "renameProvider": rename,
        "semanticTokensProvider": {"legend": {"tokenTypes": list(TOKEN_TYPES),
                                              "tokenModifiers": []}, "full": True},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
    }
    return {"capabilities": capabilities, "serverInfo": {"name": "lwtool",
                                                         "version": __version__}}


def _get(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def client_column(line: str, column: int, encoding: str) -> int:
    """A 0-based code-point column of `line` in the client's code units (what pygls's
    PositionCodec gives)."""
    head = line[:column]
    if encoding == "utf-32":
        return len(head)
    if encoding == "utf-8":
        return sum(1 if c < "\x80" else 2 if c < "\u0800" else 3 if c <= "\uffff" else 4
                   for c in head)
    return len(head) + sum(1 for c in head if c > "\uffff")


def diagnostic(finding: Finding, lines: Sequence[str], encoding: str) -> dict[str, Any]:
    """A Finding as an LSP Diagnostic, as JSON: what the early phase and the full server
    (lwtool.lsp.server) both publish."""
    def position(line: int, column: int) -> dict[str, int]:
        if line - 1 >= len(lines):
            return {"line": max(len(lines) - 1, 0), "character": 0}
        return {"line": line - 1,
                "character": client_column(lines[line - 1], column - 1, encoding)}

    span = finding.span
    return {"range": {"start": position(span.start.line, span.start.column),
                      "end": position(span.end.line, span.end.column)},
            "severity": _SEVERITY[finding.severity], "code": finding.code,
            "source": "lwtool", "message": finding.message,
            "data": {"pointer": finding.pointer}}


class EarlySession:
    """What the early phase saw: the raw messages to hand over, and each opened
    document's analysis by (uri, version)."""

    def __init__(self, reader: FrameReader, write: Any) -> None:
        self.reader = reader
        self.write = write
        self.seen: list[bytes] = []
        self.analyses: dict[tuple[str, int], Analysis] = {}
        self.initialize_id: Any = None
        self.sent_result: dict[str, Any] | None = None
        self.next_frame: asyncio.Task[bytes | None] | None = None
        self.ended = False

    async def run(self) -> None:
        """Serve until the take-over is due (see the module docstring)."""
        while True:
            frame = asyncio.ensure_future(self.reader.next())
            done, _ = await asyncio.wait({frame}, timeout=IDLE_SECONDS
                                         if self.initialize_id is not None else None)
            if not done:
                self.next_frame = frame
                return
            body = frame.result()
            if body is None:
                self.ended = True
                return
            self.seen.append(body)
            if not self._serve(body):
                return

    def _serve(self, body: bytes) -> bool:
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        if method == "initialize" and self.initialize_id is None and "id" in message:
            result = initialize_result(message.get("params"))
            if result is None:
                return False
            set_options((message.get("params") or {}).get("initializationOptions"))
            self.initialize_id = message["id"]
            self.sent_result = result
            self.write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return True
        if self.initialize_id is None or "id" in message:
            return False
        if method == "initialized":
            return True
        if method == "textDocument/didOpen":
            return self._open(message.get("params"))
        return False

    def _open(self, params: Any) -> bool:
        item = _get(params, "textDocument")
        uri, text, version = (_get(item, "uri"), _get(item, "text"), _get(item, "version"))
        if not (isinstance(uri, str) and isinstance(text, str) and isinstance(version, int)
                and isinstance(_get(item, "languageId"), str)):
            return False
        analysis = Analysis.of(text, document_name(uri))
        self.analyses[(uri, version)] = analysis
        lines = text.splitlines(True)
        assert self.sent_result is not None  # didOpen is served only after initialize
        encoding = self.sent_result["capabilities"]["positionEncoding"]
        self.write({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                    "params": {"uri": uri, "version": version, "diagnostics": [
                        diagnostic(f, lines, encoding) for f in analysis.findings]}})
        return True


def document_name(uri: str) -> str:
    """The file's path, findings are reported under and the files it names (a
    pipeline's workflows, a definition's plan) are read relative to: the editor's
    folder is no file's (the URI itself when it is no file)."""
    from pygls.uris import to_fs_path  # stdlib only: no lsprotocol behind it

    path = to_fs_path(uri) or uri
    return path if path else uri


def frame_writer(stdout: BinaryIO) -> Any:
    def write(message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode("utf-8")
        stdout.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdout.flush()
    return write

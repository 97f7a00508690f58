"""`lwtool lsp`: a language server on stdio (pygls). Thin handlers: every answer comes
from lsp/analysis.py (the validator's own structures), converted in lsp/convert.py.

Diagnostics are published on open and, debounced, after every change; the last
analysis that loaded is kept per document so that completion still knows the steps
while the text is momentarily broken.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any, BinaryIO, cast
from urllib.parse import unquote

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from lwtool._version import __version__
from lwtool.lsp.analysis import TOKEN_TYPES, Analysis, rename_problem, set_options
from lwtool.lsp.completion import completions
from lwtool.lsp.convert import from_position, to_position, to_range
from lwtool.lsp.early import TRIGGER_CHARACTERS, EarlySession, document_name
from lwtool.lsp.early import diagnostic as as_diagnostic
from lwtool.lsp.files import field_hover, linked_file
from lwtool.lsp.quick_fix import missing_need_fix, missing_permission_fix, nearest_name_fix
from lwtool.lsp.transport import serve
from lwtool.source.loader import read_regular_file
from lwtool.source.position import Pos, Span
from lwtool.validate.context import StepInfo

DEBOUNCE_SECONDS = 0.02
logger = logging.getLogger(__name__)


_CONVERTER = get_converter()

class LwtoolServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("lwtool", __version__, protocol_cls=LwtoolProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.last_loaded: dict[str, Analysis] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}
        self.early_analyses: dict[tuple[str, int], Analysis] = {}

    async def take_over(self, early: EarlySession, stdout: BinaryIO) -> bool:
        """Serve the rest of a session the early phase began (lsp/early.py) through
        lwtool's framing (lsp/transport.py), not pygls's; True when it ended with
        `shutdown` then `exit` (pygls's own sys.exit from a callback is swallowed)."""
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout))
        cast(LwtoolProtocol, self.protocol).answered_early = (early.initialize_id,
                                                              early.sent_result)
        self.early_analyses = early.analyses
        try:
            if not early.ended:
                await serve(self, early.reader, early.seen, early.next_frame)
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]
        return bool(getattr(self.protocol, "_shutdown", False))

    def document(self, uri: str) -> TextDocument | None:
        """The client's copy of an open document; for one it has not opened, the file on
        disk when it is a regular file within the loader's size limit (never a device or
        a FIFO: `file:///dev/zero` would eat memory, a FIFO would hang); else None."""
        opened = self.workspace.text_documents.get(unquote(uri))
        if opened is not None:
            return cast(TextDocument, opened)
        text = read_regular_file(to_fs_path(uri))
        if text is None:
            return None
        return TextDocument(uri, source=text, position_codec=self.workspace.position_codec)

    def analyse(self, uri: str, document: TextDocument) -> Analysis:
        return self.keep(uri, Analysis.of(document.source, document_name(uri)))

    def keep(self, uri: str, analysis: Analysis) -> Analysis:
        if unquote(uri) in self.workspace.text_documents:  # unopened files are not kept
            self.analyses[uri] = analysis
            if analysis.context is not None:
                self.last_loaded[uri] = analysis
        return analysis

    def current(self, uri: str, document: TextDocument) -> Analysis:
        return self.analyses.get(uri) or self.analyse(uri, document)

    def publish(self, uri: str) -> None:
        document = self.document(uri)
        if document is None:
            return
        analysis = self.analyse(uri, document)
        kind = document.position_codec.encoding
        encoding = str(getattr(kind, "value", kind))  # an enum member, or its text
        lines = document.lines
        # the early phase's own Finding -> Diagnostic, so both publish the same JSON
        self.text_document_publish_diagnostics(_CONVERTER.structure({
            "uri": uri, "version": document.version,
            "diagnostics": [as_diagnostic(f, lines, encoding) for f in analysis.findings]},
            types.PublishDiagnosticsParams))


class LwtoolProtocol(LanguageServerProtocol):
    """pygls's protocol, but that the reply to an `initialize` the early phase answered
    is not sent again (it is checked against what was sent instead)."""

    answered_early: tuple[Any, dict[str, Any] | None] = (None, None)

    def handle_message(self, message: Any) -> None:
        """After `shutdown` a request gets InvalidRequest, as LSP says (pygls answered
        none); notifications other than `exit` are dropped."""
        method = getattr(message, "method", "")
        if self._shutdown and method != "exit" and getattr(message, "id", None) is not None:
            from pygls.exceptions import JsonRpcInvalidRequest

            self._send_response(message.id, error=JsonRpcInvalidRequest(
                f"the server is shut down: '{method}' was not run; send exit"
            ).to_response_error())
            return
        super().handle_message(message)

    def _send_data(self, data: Any) -> None:
        msg_id, sent = self.answered_early
        if msg_id is not None and getattr(data, "id", None) == msg_id and \
                hasattr(data, "result"):
            self.answered_early = (None, None)
            computed = json.loads(json.dumps(data.result, default=self._serialize_message))
            if computed != sent:
                logger.warning("the early reply to initialize differs from pygls's: sent "
                               "%s, pygls computed %s", sent, computed)
            return
        super()._send_data(data)


server = LwtoolServer()


@server.feature(types.INITIALIZE)
def initialize(ls: LwtoolServer, params: types.InitializeParams) -> None:
    """The client's `initializationOptions` (`{"portable": true}`; when the early phase
    answered `initialize`, it took them)."""
    set_options(params.initialization_options)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LwtoolServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    early = ls.early_analyses.pop((item.uri, item.version), None)
    if early is not None and early.text == item.text:  # published by the early phase
        ls.keep(item.uri, early)
    else:
        ls.publish(item.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: LwtoolServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    previous = ls.pending.pop(uri, None)
    if previous is not None:
        previous.cancel()

    async def later() -> None:
        await asyncio.sleep(DEBOUNCE_SECONDS)
        ls.pending.pop(uri, None)
        ls.publish(uri)

    ls.pending[uri] = asyncio.ensure_future(later())


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: LwtoolServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    for table in (ls.analyses, ls.last_loaded):
        table.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


def _read(ls: LwtoolServer, uri: str) -> tuple[TextDocument, Analysis] | None:
    document = ls.document(uri)
    return None if document is None else (document, ls.current(uri, document))


def _where(ls: LwtoolServer, uri: str, position: types.Position
           ) -> tuple[TextDocument, Analysis, Pos] | None:
    found = _read(ls, uri)
    if found is None:
        return None
    document, analysis = found
    return document, analysis, from_position(position, document.lines, document.position_codec)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LwtoolServer, params: types.HoverParams) -> types.Hover | None:
    where = _where(ls, params.text_document.uri, params.position)
    if where is None or where[1].document is None:
        return None
    document, analysis, pos = where
    found = analysis.hover(analysis.offset(pos)) or field_hover(analysis, analysis.offset(pos))
    if found is None:
        return None
    text, span = found
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=to_range(span, document.lines, document.position_codec))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(ls: LwtoolServer, params: types.DefinitionParams) -> types.Location | None:
    where = _where(ls, params.text_document.uri, params.position)
    if where is None or where[1].document is None:
        return None
    document, analysis, pos = where
    here = to_fs_path(params.text_document.uri)
    linked = linked_file(analysis, analysis.offset(pos), Path(here)) if here else None
    if linked is not None:  # a pipeline's workflow, a definition's fixed plan: the file
        return types.Location(uri=linked[0].as_uri(), range=types.Range(
            start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)))
    span = analysis.definition(analysis.offset(pos))
    if span is None:
        return None
    return types.Location(uri=params.text_document.uri,
                          range=to_range(span, document.lines, document.position_codec))


REQUEST_FAILED = -32803  # LSP's RequestFailed: the client shows the message


@server.feature(types.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
                types.SemanticTokensLegend(token_types=list(TOKEN_TYPES), token_modifiers=[]))
def semantic_tokens(ls: LwtoolServer, params: types.SemanticTokensParams
                    ) -> types.SemanticTokens:
    """`{{ expressions }}` inside YAML/JSON strings, highlighted: delimiters, roots,
    member and function names, literals (the rest of the file is the editor's)."""
    found = _read(ls, params.text_document.uri)
    if found is None:
        return types.SemanticTokens(data=[])
    document, analysis = found
    data: list[int] = []
    line = character = 0
    for span, kind in analysis.expression_tokens():
        where = to_range(span, document.lines, document.position_codec)
        start = where.start
        delta_line = start.line - line
        delta_char = start.character - character if delta_line == 0 else start.character
        data += [delta_line, delta_char, where.end.character - start.character,
                 TOKEN_TYPES.index(kind), 0]
        line, character = start.line, start.character
    return types.SemanticTokens(data=data)


def _step_named(ls: LwtoolServer, uri: str, position: types.Position
                ) -> tuple[TextDocument, Analysis, StepInfo, Span] | None:
    """The step whose id stands under the cursor (its `id`, or a reference to it)."""
    where = _where(ls, uri, position)
    if where is None or where[1].context is None:
        return None
    document, analysis, pos = where
    named = analysis.step_named_at(analysis.offset(pos))
    return (document, analysis, *named) if named is not None else None


@server.feature(types.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(ls: LwtoolServer, params: types.PrepareRenameParams
                   ) -> types.PrepareRenamePlaceholder | None:
    """A step id under the cursor (its `id`, or any reference to it) can be renamed."""
    found = _step_named(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    document, _, target, span = found
    return types.PrepareRenamePlaceholder(
        range=to_range(span, document.lines, document.position_codec), placeholder=target.id)


@server.feature(types.TEXT_DOCUMENT_RENAME, types.RenameOptions(prepare_provider=True))
def rename(ls: LwtoolServer, params: types.RenameParams) -> types.WorkspaceEdit | None:
    """Rename a step: its `id` and every place that names it (needs, decision targets,
    fanIn.outputStep, `steps.<id>` in expressions), in one edit."""
    uri = params.text_document.uri
    found = _step_named(ls, uri, params.position)
    if found is None:
        return None
    document, analysis, target, _ = found
    problem = rename_problem(analysis, target, params.new_name)
    if problem is None:
        spans = analysis.rename_spans(target)
        if spans is None:
            problem = (f"a reference to '{target.id}' could not be located exactly (an "
                       "escape sequence in its string?); rename it by hand")
    if problem is not None:
        raise JsonRpcException(problem, code=REQUEST_FAILED)
    assert spans is not None
    edits = [types.TextEdit(range=to_range(span, document.lines, document.position_codec),
                            new_text=params.new_name) for span in spans]
    return types.WorkspaceEdit(changes={uri: edits})


@server.feature(types.TEXT_DOCUMENT_COMPLETION,
                types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS))
def completion(ls: LwtoolServer, params: types.CompletionParams) -> types.CompletionList:
    where = _where(ls, params.text_document.uri, params.position)
    if where is None:
        return types.CompletionList(is_incomplete=False, items=[])
    document, analysis, pos = where
    line = document.lines[pos.line - 1] if pos.line - 1 < len(document.lines) else ""
    items = completions(analysis, ls.last_loaded.get(params.text_document.uri), pos,
                        line[: pos.column - 1])
    return types.CompletionList(is_incomplete=False, items=[
        types.CompletionItem(label=label, detail=detail, kind=types.CompletionItemKind.Reference)
        for label, detail in items])


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix]))
def code_action(ls: LwtoolServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Quick fixes: `step.missing_dependency` adds the read step to `needs`;
    `permissions.unknown_tool` / `unknown_model` change a misspelt name or add the name
    to `permissions`; `lwir.invalid_field` changes a misspelt key to the one meant."""
    uri = params.text_document.uri
    found = _read(ls, uri)
    if found is None:
        return []
    document, analysis = found
    lines, codec = document.lines, document.position_codec
    actions = []
    for diagnostic in params.context.diagnostics:
        if diagnostic.code == "step.missing_dependency":
            fix = missing_need_fix(analysis, from_position(diagnostic.range.start, lines,
                                                           codec))
        elif diagnostic.code in ("permissions.unknown_tool", "permissions.unknown_model"):
            # a misspelt name: the permitted one comes first
            actions += _renamed(uri, document, diagnostic)
            fix = missing_permission_fix(analysis, diagnostic.message)
        elif diagnostic.code == "lwir.invalid_field":  # a misspelt key: the one meant
            actions += _renamed(uri, document, diagnostic)
            continue
        else:
            continue
        if fix is None:
            continue
        title, insert = fix
        at = to_position(insert.at, lines, codec)
        edit = types.TextEdit(range=types.Range(start=at, end=at), new_text=insert.text)
        actions.append(types.CodeAction(
            title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            is_preferred=not actions or actions[-1].diagnostics != [diagnostic],
            edit=types.WorkspaceEdit(changes={uri: [edit]})))
    return actions


def _renamed(uri: str, document: Any, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    """The preferred fix of a diagnostic whose message names the name meant."""
    near = nearest_name_fix(diagnostic.message, _text_in(document, diagnostic.range))
    if near is None:
        return []
    return [types.CodeAction(title=near[0], kind=types.CodeActionKind.QuickFix,
                             diagnostics=[diagnostic], is_preferred=True,
                             edit=types.WorkspaceEdit(changes={uri: [types.TextEdit(
                                 range=diagnostic.range, new_text=near[1])]}))]


def _text_in(document: Any, span: types.Range) -> str:
    """The document's text in an LSP range on one line (a diagnostic's value)."""
    if span.start.line != span.end.line or span.start.line >= len(document.lines):
        return ""
    lines, codec = document.lines, document.position_codec
    begin = from_position(span.start, lines, codec).column - 1
    end = from_position(span.end, lines, codec).column - 1
    return str(lines[span.start.line][begin:end])


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(ls: LwtoolServer, params: types.DocumentSymbolParams
                    ) -> list[types.DocumentSymbol]:
    found = _read(ls, params.text_document.uri)
    if found is None:
        return []
    document, analysis = found
    lines, codec = document.lines, document.position_codec
    children: dict[str, list[types.DocumentSymbol]] = {}
    roots: list[types.DocumentSymbol] = []
    for info, whole, name in analysis.symbols():
        own: list[types.DocumentSymbol] = []
        symbol = types.DocumentSymbol(
            name=info.id or "?", detail=info.uses, kind=types.SymbolKind.Function,
            range=to_range(whole, lines, codec), selection_range=to_range(name, lines, codec),
            children=own)
        children[info.pointer] = own
        (children[info.scope] if info.scope in children else roots).append(symbol)
    return roots



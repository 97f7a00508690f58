"""`lwtool lsp`: a language server on stdio (pygls). Thin handlers: every answer comes
from lsp/analysis.py (the validator's own structures), converted in lsp/convert.py.

Diagnostics are published on open and, debounced, after every change; the last
analysis that loaded is kept per document so that completion still knows the steps
while the text is momentarily broken.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from lwtool import __version__
from lwtool.lsp.analysis import Analysis, completions, missing_need_fix
from lwtool.lsp.convert import from_position, to_diagnostic, to_position, to_range

DEBOUNCE_SECONDS = 0.02


class LwtoolServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("lwtool", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.last_loaded: dict[str, Analysis] = {}
        self.pending: dict[str, asyncio.Task[None]] = {}

    def analyse(self, uri: str) -> Analysis:
        document = self.workspace.get_text_document(uri)
        path = to_fs_path(uri) or uri
        analysis = Analysis.of(document.source, Path(path).name if path else uri)
        self.analyses[uri] = analysis
        if analysis.context is not None:
            self.last_loaded[uri] = analysis
        return analysis

    def current(self, uri: str) -> Analysis:
        return self.analyses.get(uri) or self.analyse(uri)

    def publish(self, uri: str) -> None:
        analysis = self.analyse(uri)
        document = self.workspace.get_text_document(uri)
        codec = document.position_codec
        lines = document.lines
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version,
            diagnostics=[to_diagnostic(f, lines, codec) for f in analysis.findings]))


server = LwtoolServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: LwtoolServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.publish(params.text_document.uri)


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


def _where(ls: LwtoolServer, uri: str, position: types.Position):  # type: ignore[no-untyped-def]
    document = ls.workspace.get_text_document(uri)
    analysis = ls.current(uri)
    pos = from_position(position, document.lines, document.position_codec)
    return document, analysis, pos


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: LwtoolServer, params: types.HoverParams) -> types.Hover | None:
    document, analysis, pos = _where(ls, params.text_document.uri, params.position)
    if analysis.document is None:
        return None
    found = analysis.hover(analysis.offset(pos))
    if found is None:
        return None
    text, span = found
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                       range=to_range(span, document.lines, document.position_codec))


@server.feature(types.TEXT_DOCUMENT_DEFINITION)
def definition(ls: LwtoolServer, params: types.DefinitionParams) -> types.Location | None:
    document, analysis, pos = _where(ls, params.text_document.uri, params.position)
    if analysis.document is None:
        return None
    span = analysis.definition(analysis.offset(pos))
    if span is None:
        return None
    return types.Location(uri=params.text_document.uri,
                          range=to_range(span, document.lines, document.position_codec))


@server.feature(types.TEXT_DOCUMENT_COMPLETION,
                types.CompletionOptions(trigger_characters=[".", "[", " ", ","]))
def completion(ls: LwtoolServer, params: types.CompletionParams) -> types.CompletionList:
    document, analysis, pos = _where(ls, params.text_document.uri, params.position)
    line = document.lines[pos.line - 1] if pos.line - 1 < len(document.lines) else ""
    items = completions(analysis, ls.last_loaded.get(params.text_document.uri), pos,
                        line[: pos.column - 1])
    return types.CompletionList(is_incomplete=False, items=[
        types.CompletionItem(label=label, detail=detail, kind=types.CompletionItemKind.Reference)
        for label, detail in items])


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix]))
def code_action(ls: LwtoolServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Quick fix for `step.missing_dependency`: add the read step to `needs`."""
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    analysis = ls.current(uri)
    lines, codec = document.lines, document.position_codec
    actions = []
    for diagnostic in params.context.diagnostics:
        if diagnostic.code != "step.missing_dependency":
            continue
        fix = missing_need_fix(analysis, from_position(diagnostic.range.start, lines, codec))
        if fix is None:
            continue
        title, insert = fix
        at = to_position(insert.at, lines, codec)
        edit = types.TextEdit(range=types.Range(start=at, end=at), new_text=insert.text)
        actions.append(types.CodeAction(
            title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
            is_preferred=True, edit=types.WorkspaceEdit(changes={uri: [edit]})))
    return actions


@server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(ls: LwtoolServer, params: types.DocumentSymbolParams
                    ) -> list[types.DocumentSymbol]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    analysis = ls.current(uri)
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


def main() -> None:
    """Serve on stdio. The exit code follows LSP: 0 after `shutdown` then `exit`, 1 for
    an `exit` without `shutdown` (pygls's own sys.exit from a callback is swallowed)."""
    server.start_io()
    if not getattr(server.protocol, "_shutdown", False):
        raise SystemExit(1)

"""The language server end to end: a real LSP client (pytest-lsp) over stdio."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_document

URI = "file:///work/review.lwir.yaml"

BROKEN = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: review}
permissions: {models: [gpt-4o-mini], tools: [fetchCandidates]}
steps:
  - id: fetch
    uses: tool.call
    with: {tool: fetchCandidates}
  - id: score
    uses: ai.generate
    with:
      model: gpt-4o-mini
      prompt: "Score {{ steps.fetch.output }} for naïve 😀 {{ steps.fecth.output }}"
"""

FIXED = BROKEN.replace("    uses: ai.generate\n", "    uses: ai.generate\n    needs: [fetch]\n") \
    .replace("steps.fecth.output", "steps.fetch.output")




def _open(client: LanguageClient, text: str, uri: str = URI) -> None:
    open_document(client, text, uri)


async def test_diagnostics_appear_and_clear(client: LanguageClient) -> None:
    _open(client, BROKEN)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diagnostics = client.diagnostics[URI]
    found = {(d.code, d.range.start.line, d.range.start.character) for d in diagnostics}
    # line 13 (0-based 12): `      prompt: "Score {{ steps.fetch.output }} ...`
    assert ("step.missing_dependency", 12, 24) in found
    # after "naïve 😀 " the emoji counts two UTF-16 units: the column shifts by one
    line = BROKEN.splitlines()[12]
    expected = len(line[: line.index("steps.fecth")].encode("utf-16-le")) // 2
    assert ("step.missing_dependency", 12, expected) in found
    assert all(d.source == "lwtool" for d in diagnostics)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=FIXED)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[URI]) == []


async def test_syntax_error_is_a_diagnostic(client: LanguageClient) -> None:
    uri = "file:///work/broken.json"
    _open(client, '{"apiVersion": "littleworkflow.dev/v0.1",\n "kind": }', uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [diagnostic] = client.diagnostics[uri]
    assert diagnostic.code == "parse.invalid" and diagnostic.range.start.line == 1


async def test_hover_on_step_type_and_reference(client: LanguageClient) -> None:
    _open(client, FIXED)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    on_type = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=6, character=12)))
    assert on_type is not None and "tool.call" in on_type.contents.value
    line = FIXED.splitlines()[13].index("steps.fetch")
    on_ref = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=13, character=line + 8)))
    assert on_ref is not None and "step `fetch`" in on_ref.contents.value


async def test_hover_on_expression_roots_and_functions(client: LanguageClient) -> None:
    text = FIXED.replace("Score {{ steps.fetch.output }}",
                         "Score {{ coalesce(input.name, steps.fetch.output) }}")
    _open(client, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    line = text.splitlines()[13]
    for needle, expected in (("coalesce", "first argument that is not null"),
                             ("input.name", "the workflow input")):
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=types.Position(line=13, character=line.index(needle) + 2)))
        assert hover is not None and expected in hover.contents.value


async def test_definition_from_reference_and_needs(client: LanguageClient) -> None:
    _open(client, FIXED)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    line = FIXED.splitlines()[13].index("steps.fetch")
    for position in (types.Position(line=13, character=line + 7),
                     types.Position(line=10, character=13)):
        result = await client.text_document_definition_async(types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=URI), position=position))
        assert isinstance(result, types.Location)
        assert (result.range.start.line, result.range.start.character) == (5, 8)


async def test_completion_of_step_ids(client: LanguageClient) -> None:
    text = FIXED.replace("needs: [fetch]", "needs: [")
    _open(client, FIXED)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=10, character=len("    needs: ["))))
    assert {item.label for item in result.items} == {"fetch"}  # never the step itself
    prompt_line = FIXED.splitlines()[13]
    cut = prompt_line.index("steps.fetch") + len("steps.")
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=13, character=cut)))
    assert {item.label for item in result.items} == {"fetch"}  # score is the reader
    cut = prompt_line.index("steps.fetch.") + len("steps.fetch.")
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=13, character=cut)))
    assert {item.label for item in result.items} == {"output", "lastOutput", "allVisits"}
    edited = prompt_line.replace("steps.fetch.output", "steps.fetch.la")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text=text.replace(prompt_line, edited))]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=13, character=edited.index(".la") + 3)))
    assert {item.label for item in result.items} == {"lastOutput"}  # by the typed prefix


async def test_completion_of_permitted_tools_and_model_slots(
        client: LanguageClient) -> None:
    """Inside a step: `tools: [` (flow or block list) offers permissions.tools, MCP
    names with their dots, by the typed prefix; `tool:` the same; `model:` the slots."""
    uri = "file:///work/agent.lwir.yaml"
    text = """apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: agent}
permissions: {tools: [search, time.get_current_time, fetch], models: [fast, strong]}
steps:
  - id: ask
    uses: ai.agent
    with:
      model: fast
      tools: [search, time.get_current_time]
      prompt: hi
  - id: one
    uses: ai.agent
    with:
      model: strong
      tools:
        - fetch
"""
    _open(client, text, uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []

    async def labels(line: int, character: int) -> set[str]:
        result = await client.text_document_completion_async(types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character)))
        return {item.label for item in result.items}

    lines = text.splitlines()
    assert await labels(9, len("      tools: [")) == {"search", "time.get_current_time",
                                                     "fetch"}
    assert await labels(9, len("      tools: [search, time.")) == {"time.get_current_time"}
    assert await labels(8, len("      model: ")) == {"fast", "strong"}
    assert await labels(14, len("      model: st")) == {"strong"}
    assert await labels(16, len("        - f")) == {"fetch"}
    assert await labels(3, lines[3].index("search")) == set()  # the list itself: no step


async def test_document_symbols_outline_steps(client: LanguageClient) -> None:
    text = open("examples/candidate-review.lwir.yaml", encoding="utf-8").read()
    uri = "file:///work/candidate-review.lwir.yaml"
    _open(client, text, uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []
    symbols = await client.text_document_document_symbol_async(types.DocumentSymbolParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert [s.name for s in symbols] == ["review-cands"]
    assert [c.name for c in symbols[0].children] == ["worker", "review", "route"]


async def test_completion_of_decision_targets_in_json(client: LanguageClient) -> None:
    uri = "file:///work/route.lwir.json"
    text = """{
  "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow", "metadata": {"name": "r"},
  "permissions": {"tools": ["t"]}, "steps": [
    {"id": "check", "uses": "tool.call", "with": {"tool": "t"}},
    {"id": "route", "uses": "decision", "needs": ["check"],
     "with": {"cases": [], "default": "end"}}
  ]
}"""
    _open(client, text, uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []
    line = text.splitlines()[5]
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=5, character=line.index('"end"') + 1)))
    assert {item.label for item in result.items} == {"check", "end"}
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=5, character=line.index('"end"') + 2)))
    assert {item.label for item in result.items} == {"end"}  # what starts with "e"


async def _the_one_fix_clears(client: LanguageClient, text: str, diagnostic: types.Diagnostic,
                              title: str, *others: str) -> None:
    """Ask for the diagnostic's quick fixes, check their titles (the first preferred),
    apply the first one's edit and see every diagnostic go."""
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=URI), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    assert [a.title for a in actions] == [title, *others]
    assert [a.is_preferred for a in actions] == [True] + [False] * len(others)
    [edit] = actions[0].edit.changes[URI]
    lines = text.split("\n")
    line = lines[edit.range.start.line]
    assert edit.range.start.line == edit.range.end.line
    lines[edit.range.start.line] = (line[: edit.range.start.character] + edit.new_text
                                    + line[edit.range.end.character:])
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text="\n".join(lines))]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[URI]) == []


async def test_quick_fix_adds_the_missing_need(client: LanguageClient) -> None:
    text = FIXED.replace("    needs: [fetch]\n", "")
    _open(client, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diagnostic = client.diagnostics[URI][0]  # the prompt reads steps.fetch twice
    assert {d.code for d in client.diagnostics[URI]} == {"step.missing_dependency"}
    await _the_one_fix_clears(client, text, diagnostic, "Add 'fetch' to the needs of 'score'")


async def test_quick_fix_permits_an_unlisted_tool(client: LanguageClient) -> None:
    text = FIXED.replace("with: {tool: fetchCandidates}", "with: {tool: fetch2}")
    _open(client, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [diagnostic] = client.diagnostics[URI]
    assert diagnostic.code == "permissions.unknown_tool"
    await _the_one_fix_clears(client, text, diagnostic, "Add 'fetch2' to permissions.tools")


async def test_quick_fix_changes_a_misspelt_top_level_key(client: LanguageClient) -> None:
    text = FIXED.replace("permissions:", "permisions:")
    _open(client, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    found = [d for d in client.diagnostics[URI] if d.code == "lwir.invalid_field"]
    assert [d.message for d in found] == [
        "unknown field 'permisions'; did you mean 'permissions'?"]
    await _the_one_fix_clears(client, text, found[0], "Change 'permisions' to 'permissions'")


async def test_quick_fix_offers_the_permitted_name_a_typo_is_near(client: LanguageClient) -> None:
    text = FIXED.replace("with: {tool: fetchCandidates}", "with: {tool: fetchCandidate}")
    _open(client, text)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [diagnostic] = client.diagnostics[URI]
    assert diagnostic.message.endswith("; did you mean 'fetchCandidates'?")
    await _the_one_fix_clears(client, text, diagnostic,
                              "Change 'fetchCandidate' to 'fetchCandidates'",
                              "Add 'fetchCandidate' to permissions.tools")


async def test_without_the_portable_option_extensions_are_no_finding(
        client: LanguageClient) -> None:
    uri = "file:///work/ask.lwir.yaml"
    _open(client, "apiVersion: littleworkflow.dev/v0.1\nkind: Workflow\nmetadata: {name: a}\n"
          "steps:\n  - {id: ask, uses: human.input, with: {prompt: x, schema: {}}}\n", uri)
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []

"""What the editor features ask of a document, answered from the validator's own
structures (the loader's source map, the rule context). No LSP types here: positions
are 1-based code points, like everywhere in lwtool; lsp/convert.py translates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lwtool.expr import ast
from lwtool.expr.functions import FUNCTIONS
from lwtool.lsp.describe import ROOT_DOCS, STEP_TYPE_DOCS, describe_step
from lwtool.source.finding import Finding
from lwtool.source.loader import Document, LoadFailed, load_text
from lwtool.source.position import Pos, Span
from lwtool.validate.context import Context, StepInfo
from lwtool.validate.flow import decision_targets
from lwtool.validate.run import document_kind, validate_document

# `initializationOptions.portable` (the early phase and the server read `initialize`):
# every analysis then also reports lwtool's extensions (lwtool.validate.portable)
PORTABLE = [False]


def set_options(options: Any) -> None:
    """Take a client's `initializationOptions` (`{"portable": true}`)."""
    PORTABLE[0] = isinstance(options, dict) and options.get("portable") is True


@dataclass
class Analysis:
    """One version of one document: its findings and, when it loaded, its structure."""

    path: str
    text: str
    document: Document | None
    findings: list[Finding]
    context: Context | None

    @classmethod
    def of(cls, text: str, path: str) -> Analysis:
        try:
            document = load_text(text, path)
        except LoadFailed as failed:
            return cls(path, text, None, failed.findings, None)
        findings = validate_document(document)
        kind = document_kind(document)
        if PORTABLE[0]:
            from lwtool.validate.portable import portable_findings

            findings = sorted(findings + portable_findings(document, kind),
                              key=Finding.sort_key)
        context = Context(document, kind) if kind == "Workflow" else None
        return cls(path, text, document, findings, context)

    # -- positions -----------------------------------------------------------------------

    def offset(self, pos: Pos) -> int:
        lines = self.text.split("\n")
        line = min(pos.line, len(lines)) - 1
        return sum(len(lines[i]) + 1 for i in range(line)) + min(pos.column - 1,
                                                                 len(lines[line]))

    def pointer_at(self, offset: int) -> tuple[str, bool] | None:
        """The innermost pointer whose value (or key) holds `offset`; True when on the key."""
        if self.document is None:
            return None
        best: tuple[int, str, bool] | None = None
        for pointer, (start, end, key_start, key_end, _) in \
                self.document.source_map.entries.items():
            for lo, hi, on_key in ((start, end, False), (key_start, key_end, True)):
                if lo is not None and lo <= offset <= hi and (best is None or hi - lo < best[0]):
                    best = (hi - lo, pointer, on_key)
        return (best[1], best[2]) if best else None

    def span_of(self, pointer: str, key: bool = False) -> Span:
        assert self.document is not None
        source_map = self.document.source_map
        return source_map.key_span(pointer) if key else source_map.span(pointer)

    def step_for(self, pointer: str) -> StepInfo | None:
        """The step that holds `pointer` (the innermost one)."""
        if self.context is None:
            return None
        best = None
        for info in self.context.steps:
            if pointer == info.pointer or pointer.startswith(info.pointer + "/"):
                if best is None or len(info.pointer) > len(best.pointer):
                    best = info
        return best

    # -- features ------------------------------------------------------------------------

    def owner_at(self, offset: int) -> tuple[str, StepInfo] | None:
        """The innermost pointer at `offset` and the step that holds it."""
        found = self.pointer_at(offset)
        if found is None or self.context is None:
            return None
        owner = self.step_for(found[0])
        return (found[0], owner) if owner is not None else None

    def reference_at(self, offset: int) -> tuple[StepInfo, Span] | None:
        """The step a reference at `offset` names: `steps.X` in an expression, an item of
        `needs`, a decision `to`/`default`, or `fanIn.outputStep`."""
        located = self.owner_at(offset)
        if located is None or self.context is None:
            return None
        pointer, owner = located
        value = _resolve(self.document.value if self.document else None, pointer)
        if not isinstance(value, str):
            return None
        relative = pointer[len(owner.pointer):]
        if re.fullmatch(r"/needs/\d+", relative) or re.fullmatch(
                r"/with/(cases/\d+/to|default)", relative):
            target = self.context.in_scope(owner.scope).get(value)
            return (target, self.span_of(pointer)) if target else None
        if relative == "/with/fanIn/outputStep":
            target = self.context.in_scope(owner.pointer).get(value)
            return (target, self.span_of(pointer)) if target else None
        site = self.context.site_at(pointer)
        if site is None:
            return None
        for ref in site.references():
            if ref.step is None:
                continue
            span = self.context.expression_span(pointer, value, ref.start, ref.end)
            if span.start <= self._pos(offset) <= span.end:
                target = self._read_step(owner, ref.step)
                return (target, span) if target else None
        return None

    def _read_step(self, reader: StepInfo, step_id: str) -> StepInfo | None:
        """The step `steps.<step_id>` names in an expression of `reader`: the one in its
        scope, else the first anywhere with that id."""
        assert self.context is not None
        return self.context.in_scope(reader.scope).get(step_id) or next(
            (s for s in self.context.steps if s.id == step_id), None)

    def _workflow_input(self) -> Any:
        value = self.document.value if self.document is not None else None
        section = value.get("input") if isinstance(value, dict) else None
        return section.get("schema") if isinstance(section, dict) else None

    def _pos(self, offset: int) -> Pos:
        assert self.document is not None
        return Pos(*self.document.source_map.to_pos(offset))

    def hover(self, offset: int) -> tuple[str, Span] | None:
        reference = self.reference_at(offset)
        if reference is not None:
            target, span = reference
            return describe_step(target, self._workflow_input()), span
        in_expression = self._expression_hover(offset)
        if in_expression is not None:
            return in_expression
        located = self.owner_at(offset)
        if located is None:
            return None
        pointer, owner = located
        if pointer == f"{owner.pointer}/uses" and owner.uses in STEP_TYPE_DOCS:
            return f"**{owner.uses}**: {STEP_TYPE_DOCS[owner.uses]}", self.span_of(pointer)
        if pointer == f"{owner.pointer}/id":
            return describe_step(owner, self._workflow_input()), self.span_of(pointer)
        return None

    def _expression_hover(self, offset: int) -> tuple[str, Span] | None:
        """A root (`input`, `item`, ...) or a function call under the cursor."""
        found = self.pointer_at(offset)
        if found is None or self.context is None:
            return None
        site = self.context.site_at(found[0])
        if site is None or site.template is None:
            return None
        pos = self._pos(offset)
        for part in site.template.expressions:
            for node in ast.walk(part.node) if part.node else ():
                if isinstance(node, ast.Call) and node.name in FUNCTIONS:
                    start, end, text = node.start, node.name_end, FUNCTIONS[node.name].doc
                    text = f"**{node.name}()**: {text}"
                elif isinstance(node, ast.Root) and node.name in ROOT_DOCS:
                    start, end, text = node.start, node.end, ROOT_DOCS[node.name]
                else:
                    continue
                span = self.context.expression_span(site.pointer, site.value,
                                                    part.offset + start, part.offset + end)
                if span.start <= pos <= span.end:
                    return text, span
        return None

    def definition(self, offset: int) -> Span | None:
        reference = self.reference_at(offset)
        if reference is None:
            return None
        return self.span_of(f"{reference[0].pointer}/id")

    # -- semantic tokens -----------------------------------------------------------------

    def expression_tokens(self) -> list[tuple[Span, str]]:
        """The parts of every `{{ }}` in the document as (file span, token type): the
        delimiters, roots (`steps`, `input`, ...), member names, function names and
        literals; in document order, one line each."""
        if self.context is None:
            return []
        found: list[tuple[Span, str]] = []
        for site in self.context.templates:
            for part in site.template.expressions if site.template else ():
                close = part.offset + len(part.text)
                pieces = [(close, close + 2, "macro")]
                after_open = self.context.expression_span(site.pointer, site.value,
                                                          part.offset, part.offset + 1).start
                if after_open.column > 2:  # `{{` stands just before the expression text
                    found.append((Span(Pos(after_open.line, after_open.column - 2),
                                       after_open), "macro"))
                for node in ast.walk(part.node) if part.node else ():
                    piece = _token_of(node)
                    if piece is not None:
                        pieces.append((part.offset + piece[0], part.offset + piece[1], piece[2]))
                for start, end, kind in pieces:
                    span = self.context.expression_span(site.pointer, site.value, start, end)
                    if span.start.line == span.end.line and span.end > span.start:
                        found.append((span, kind))
        return sorted(set(found), key=lambda t: (t[0].start, t[0].end))

    # -- rename --------------------------------------------------------------------------

    def step_named_at(self, offset: int) -> tuple[StepInfo, Span] | None:
        """The step whose id stands at `offset`: its own `id`, or a reference to it."""
        reference = self.reference_at(offset)
        if reference is not None:
            return reference
        located = self.owner_at(offset)
        if located is None:
            return None
        pointer, owner = located
        if pointer == f"{owner.pointer}/id":
            bare = self._bare(self.span_of(pointer), owner.id)
            return (owner, bare) if bare is not None else None
        return None

    def rename_spans(self, target: StepInfo) -> list[Span] | None:
        """Every place the id of `target` is written: its `id`, `needs` items, decision
        `to`/`default`, `fanIn.outputStep` and `steps.<id>` in expressions. None when one
        of them cannot be located exactly (an escape inside the string, say)."""
        assert self.context is not None
        found = [self.span_of(f"{target.pointer}/id")]
        for info in self.context.steps:
            if info.scope == target.scope:
                for n, need in enumerate(info.step.get("needs") or []):
                    if need == target.id:
                        found.append(self.span_of(f"{info.pointer}/needs/{n}"))
                found += [self.span_of(pointer) for value, pointer in decision_targets(info)
                          if value == target.id]
            fan_in = info.with_.get("fanIn")
            if info.pointer == target.scope and isinstance(fan_in, dict) and \
                    fan_in.get("outputStep") == target.id:
                found.append(self.span_of(f"{info.pointer}/with/fanIn/outputStep"))
        for site, owner, ref in self.context.step_references():
            if ref.step != target.id:
                continue
            if self._read_step(owner, ref.step) is not target:
                continue
            at = site.value.find(target.id, ref.start + len("steps"), ref.end)
            if at < 0:
                return None
            found.append(self.context.expression_span(site.pointer, site.value, at,
                                                      at + len(target.id)))
        spans = []
        for span in found:
            bare = self._bare(span, target.id)
            if bare is None:
                return None
            spans.append(bare)
        return sorted(set(spans))

    def _bare(self, span: Span, word: str) -> Span | None:
        """`span` narrowed to exactly `word` (quotes around a string dropped); None when
        the text there is not the word."""
        start, end = self.offset(span.start), self.offset(span.end)
        text = self.text[start:end]
        inner = text.find(word)
        if inner < 0 or text.strip("\"'") != word:
            return None
        begin = start + inner
        return Span(self._pos(begin), self._pos(begin + len(word)))

    def symbols(self) -> list[tuple[StepInfo, Span, Span]]:
        """(step, whole step span, id span) for every step, parents first."""
        if self.context is None:
            return []
        return [(info, self.span_of(info.pointer), self.span_of(f"{info.pointer}/id"))
                for info in self.context.steps]


TOKEN_TYPES = ("macro", "variable", "property", "function", "string", "number", "keyword")


def _token_of(node: ast.Node) -> tuple[int, int, str] | None:
    """(start, end, token type) of what an expression node shows, in expression text."""
    if isinstance(node, ast.Root):
        return node.start, node.end, "variable"
    if isinstance(node, ast.Member):
        return node.end - len(node.name), node.end, "property"
    if isinstance(node, ast.Call):
        return node.start, node.name_end, "function"
    if isinstance(node, ast.Literal):
        value = node.value
        kind = "string" if isinstance(value, str) else "keyword" if value is None or \
            isinstance(value, bool) else "number"
        return node.start, node.end, kind
    return None


STEP_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def rename_problem(analysis: Analysis, target: StepInfo, new_id: str) -> str | None:
    """Why `target` cannot be renamed to `new_id`, or None."""
    assert analysis.context is not None
    if not STEP_ID.fullmatch(new_id):
        return (f"'{new_id}' is not a step id (a letter or _, then letters, digits, _ "
                "or -)")
    if new_id == "end":
        return "'end' is the decision target that ends a scope, not a step id"
    if new_id != target.id and new_id in analysis.context.in_scope(target.scope):
        return f"a step '{new_id}' exists already in this scope"
    return None


def _resolve(value: Any, pointer: str) -> Any:
    from lwtool.source import pointer as jp

    try:
        return jp.resolve(value, pointer)
    except (KeyError, IndexError, ValueError):
        return None

"""What the editor features ask of a document, answered from the validator's own
structures (the loader's source map, the rule context). No LSP types here: positions
are 1-based code points, like everywhere in lwtool; lsp/convert.py translates."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from lwtool.expr import ast
from lwtool.expr.ast import STEP_ACCESSORS
from lwtool.expr.functions import FUNCTIONS
from lwtool.source.finding import Finding
from lwtool.source.loader import Document, LoadFailed, load_text
from lwtool.source.position import Pos, Span
from lwtool.validate.context import Context, StepInfo
from lwtool.validate.flow import decision_targets
from lwtool.validate.run import document_kind, validate_document

STEP_TYPE_DOCS = {
    "ai.generate": "One model call on a model slot; the reply is checked against the output "
                   "mode (text, object, array, choice, json). No tools are offered.",
    "tool.call": "Calls one registered tool directly with the step input.",
    "code.run": "Runs pinned TypeScript source in a sandbox enforcing the step's sandbox "
                "policy; `tools` proxies registered tools (caller: code).",
    "decision": "Routes to the first case whose `when` is truthy, else `default`; `end` "
                "ends the scope. Records only `{chosen}`.",
    "parallel": "Runs its `steps` once per item (bounded by maxBranches and "
                "maxConcurrency) and fans the branch outputs in, in input or itemKey order.",
}


ROOT_DOCS = {
    "input": "**input**: the workflow input (checked against `input.schema`).",
    "item": "**item**: the current element of the enclosing parallel step's `items`.",
    "workflow": "**workflow**: `name`, `version`, `runId`, `versionId` of this run.",
    "step": "**step**: `id`, `path`, `visit` and `attempt` of the step being run.",
    "steps": "**steps**: `steps.<id>.output`, `.lastOutput` or `.allVisits`.",
}


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


def describe_input(info: StepInfo, workflow_input: Any = None) -> str:
    """What a step receives as its input (the runtime's rule: `input`, else
    `with.args`, else the current item inside a parallel body, else the run input)."""
    with_ = info.step.get("with")
    for key, value in (("input", info.step.get("input")),
                       ("with.args", with_.get("args") if isinstance(with_, dict) else None)):
        if value is not None:
            text = json.dumps(value, ensure_ascii=False)
            text = text if len(text) <= 160 else text[:157] + "..."
            return f"input: its `{key}`, `{text}` (`{{{{ }}}}` filled in when it runs)"
    if info.parent is not None:
        parent_with = info.parent.step.get("with")
        items = parent_with.get("items") if isinstance(parent_with, dict) else None
        return (f"input: the current item of `{info.parent.id}` (one of `{items}`)"
                if isinstance(items, str) else f"input: the current item of `{info.parent.id}`")
    if isinstance(workflow_input, dict):
        properties = workflow_input.get("properties")
        props = sorted(properties) if isinstance(properties, dict) else []
        required = [r for r in workflow_input.get("required") or [] if isinstance(r, str)]
        shape = f"an object with {', '.join(props)}" if props else \
            f"a {workflow_input.get('type', 'JSON value')}"
        need = f" (required: {', '.join(required)})" if required else ""
        return f"input: the workflow input, {shape}{need}"
    return "input: the workflow input"


def describe_step(info: StepInfo, workflow_input: Any = None) -> str:
    lines = [f"**step `{info.id}`** ({info.uses or '?'})"]
    if info.uses != "parallel":
        lines.append(describe_input(info, workflow_input))
    if info.needs:
        lines.append("needs: " + ", ".join(info.needs))
    if info.max_visits > 1:
        lines.append(f"maxVisits: {info.max_visits} (read it with lastOutput / allVisits)")
    output = info.step.get("output")
    if isinstance(output, dict) and output.get("mode"):
        lines.append(f"output: {output['mode']}")
    targets = [t for t, _ in decision_targets(info)]
    if targets:
        lines.append("routes to: " + ", ".join(targets))
    description = info.step.get("description")
    if isinstance(description, str):
        lines.append(description)
    return "\n\n".join(lines)


def _resolve(value: Any, pointer: str) -> Any:
    from lwtool.source import pointer as jp

    try:
        return jp.resolve(value, pointer)
    except (KeyError, IndexError, ValueError):
        return None


# -- completion ---------------------------------------------------------------------------

_EXPR_STEPS = re.compile(r"\{\{[^}]*\bsteps\.([A-Za-z0-9_-]*)$")
_EXPR_ACCESSOR = re.compile(r"\{\{[^}]*\bsteps\.([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z]*)$")
# Keys may be quoted (JSON, or quoted YAML keys): `needs: [`, `"needs": ["a", "`.
_NEEDS = re.compile(r"(^|[\s{,\"'])needs[\"']?\s*:\s*\[?([^\]]*)$|^\s*-\s*[A-Za-z0-9_-]*$")
_TARGET = re.compile(r"(^|[\s{,\"'])(to|default)[\"']?\s*:\s*[\"']?[A-Za-z0-9_-]*$")


_TYPED = re.compile(r"[A-Za-z0-9_-]*$")


def completions(analysis: Analysis, fallback: Analysis | None, pos: Pos,
                line_prefix: str) -> list[tuple[str, str]]:
    """(label, detail) items for the text before the cursor, filtered by the word typed
    so far; a step is never offered to itself. The structure comes from the current
    analysis, or from the last one that loaded while the text is broken."""
    source = analysis if analysis.context is not None else fallback
    if source is None or source.context is None:
        return []
    owner, scope_steps = _scope_near(source, pos)
    typed = _TYPED.search(line_prefix)
    prefix = typed.group(0) if typed else ""
    if (match := _EXPR_ACCESSOR.search(line_prefix)) is not None:
        return [(name, f"steps.{match.group(1)}.{name}") for name in STEP_ACCESSORS
                if name.startswith(match.group(2))]
    others = [(s.id, s.uses) for s in scope_steps
              if s.id.startswith(prefix) and (owner is None or s.id != owner.id)]
    if _EXPR_STEPS.search(line_prefix):
        return others
    if _TARGET.search(line_prefix):
        return others + ([("end", "end this scope")] if "end".startswith(prefix) else [])
    if _NEEDS.search(line_prefix) and ("needs" in line_prefix or _in_needs(source, pos)):
        return others
    return []


def _scope_near(analysis: Analysis, pos: Pos) -> tuple[StepInfo | None, list[StepInfo]]:
    """The step the cursor stands in (None at the top level) and the steps of its scope
    (the top level when unsure)."""
    assert analysis.context is not None
    owner = None
    for info in analysis.context.steps:
        span = analysis.span_of(info.pointer)
        if span.start <= pos <= span.end:
            owner = info
    scope = owner.scope if owner is not None else ""
    return owner, list(analysis.context.in_scope(scope).values())


def _in_needs(analysis: Analysis, pos: Pos) -> bool:
    """Whether the line above the cursor opens or continues a `needs:` block list."""
    lines = analysis.text.split("\n")
    for index in range(pos.line - 2, -1, -1):
        line = lines[index].strip() if index < len(lines) else ""
        if line.startswith("- "):
            continue
        return line.rstrip(":").endswith("needs")
    return False


# -- quick fix: add a missing need ---------------------------------------------------------

@dataclass(frozen=True)
class TextInsert:
    """Insert `text` at a 1-based position."""

    at: Pos
    text: str


def missing_need_fix(analysis: Analysis, finding_start: Pos) -> tuple[str, TextInsert] | None:
    """For a `step.missing_dependency` reference at `finding_start`: the title and the
    insertion that adds the read step to the reader's `needs` (flow or block lists, a new
    `needs` key, YAML or JSON)."""
    if analysis.document is None or analysis.context is None:
        return None
    offset = analysis.offset(finding_start)
    reference = analysis.reference_at(offset)
    located = analysis.owner_at(offset)
    if reference is None or located is None:
        return None
    target, owner = reference[0], located[1]
    if target.id in owner.needs or target.scope != owner.scope:
        return None
    title = f"Add '{target.id}' to the needs of '{owner.id}'"
    insert = _needs_insert(analysis, owner, target.id)
    return (title, insert) if insert is not None else None


def _needs_insert(analysis: Analysis, owner: StepInfo, need: str) -> TextInsert | None:
    return (_list_append(analysis, f"{owner.pointer}/needs", owner.step.get("needs") or [],
                         need)
            or _key_before(analysis, f"{owner.pointer}/uses", "needs", need))


def _word(analysis: Analysis, value: str) -> str:
    assert analysis.document is not None
    return json.dumps(value) if analysis.document.format == "json" else value


def _list_append(analysis: Analysis, pointer: str, items: list[Any],
                 value: str) -> TextInsert | None:
    """Append `value` to the list at `pointer` (flow or block); None when no list is there."""
    assert analysis.document is not None
    text = analysis.text
    word = _word(analysis, value)
    entries = analysis.document.source_map.entries
    to_pos = analysis.document.source_map.to_pos
    found = entries.get(pointer)
    if found is None:
        return None
    start, end = found[0], found[1]
    if text[start] == "[":  # a flow list: before its closing bracket
        close = text.rindex("]", start, end)
        return TextInsert(Pos(*to_pos(close)), word if not items else f", {word}")
    last = entries.get(f"{pointer}/{len(items) - 1}")
    if last is None:
        return None
    column = to_pos(last[0])[1]
    indent = " " * max(column - 3, 0)  # the item's value stands after "- "
    return TextInsert(Pos(*to_pos(last[1])), f"\n{indent}- {word}")


def _key_before(analysis: Analysis, anchor: str, key: str, value: str) -> TextInsert | None:
    """A new `key: [value]` in the mapping holding the key at `anchor`: before it in a
    flow mapping (and in JSON), else on the line after it, at its indent."""
    assert analysis.document is not None
    text = analysis.text
    json_like = analysis.document.format == "json"
    entries = analysis.document.source_map.entries
    to_pos = analysis.document.source_map.to_pos
    found = entries.get(anchor)
    if found is None or found[2] is None:
        return None
    key_start = found[2]
    word = _word(analysis, value)
    before = text[:key_start].rstrip(" \t")
    if json_like or before.endswith(("{", ",")):  # a flow mapping: a key before the anchor
        name = json.dumps(key) if json_like else key
        return TextInsert(Pos(*to_pos(key_start)), f"{name}: [{word}], ")
    line_end = text.find("\n", found[1])
    line_end = len(text) if line_end < 0 else line_end
    indent = " " * (to_pos(key_start)[1] - 1)
    return TextInsert(Pos(*to_pos(line_end)), f"\n{indent}{key}: [{word}]")


# -- quick fix: permit a tool or a model slot ------------------------------------------

_UNPERMITTED = re.compile(r"^(?:tool|model slot) '(.+)' is not in permissions\.(tools|models)")


def missing_permission_fix(analysis: Analysis, message: str) -> tuple[str, TextInsert] | None:
    """For `permissions.unknown_tool` / `permissions.unknown_model` (the message names
    the tool or slot): add it to `permissions.tools` / `.models`, or add that list."""
    match = _UNPERMITTED.match(message)
    document = analysis.document
    if match is None or document is None or not isinstance(document.value, dict):
        return None
    name, kind = match.group(1), match.group(2)
    permissions = document.value.get("permissions")
    if not isinstance(permissions, dict):
        return None
    listed = permissions.get(kind)
    if isinstance(listed, list) and name in listed:
        return None
    title = f"Add '{name}' to permissions.{kind}"
    if isinstance(listed, list):
        insert = _list_append(analysis, f"/permissions/{kind}", listed, name)
    elif kind in permissions or not permissions:
        return None  # a value that is not a list, or `permissions: {}`: rewrite by hand
    else:
        first = next(iter(permissions)).replace("~", "~0").replace("/", "~1")
        insert = _key_before(analysis, f"/permissions/{first}", kind, name)
    return (title, insert) if insert is not None else None

"""What every rule sees: the document, an index of its steps and its parsed templates."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lwtool.expr import ast
from lwtool.expr.parser import ExprSyntaxError
from lwtool.expr.refs import Reference, references
from lwtool.expr.template import Part, Template, has_template, parse_template
from lwtool.source import pointer as jp
from lwtool.source.finding import Finding, Severity
from lwtool.source.loader import Document
from lwtool.source.position import Pos, Span

STEP_TYPES = ("ai.generate", "ai.agent", "tool.call", "code.run", "decision", "parallel",
              "human.input", "workflow.invoke", "map")
MODEL_STEPS = ("ai.generate", "ai.agent")  # the steps that call the model `with.model` names
TOP = ""  # the scope id of the workflow's own step list


def named_tools(step: Any) -> list[tuple[str, Any]]:
    """(JSON Pointer within the step, name) of each tool a step names: a tool.call's
    `with.tool`, each of an ai.agent's `with.tools`; each must be in permissions.tools."""
    settings = step.get("with") if isinstance(step, dict) else None
    if not isinstance(settings, dict):
        return []
    if step.get("uses") == "tool.call":
        return [("/with/tool", settings.get("tool"))]
    offered = settings.get("tools") if step.get("uses") == "ai.agent" else None
    return [(f"/with/tools/{n}", name)
            for n, name in enumerate(offered if isinstance(offered, list) else [])]


@dataclass(slots=True)
class StepInfo:
    """One step, wherever it stands. `scope` is the pointer of the enclosing parallel
    step ("" at top level); `parent` is that parallel step's StepInfo. `id`, `uses`
    and `needs` are read once (the rules ask for them ~15 times a step): "" or [] where
    the step has none of the right type."""

    step: dict[str, Any]
    pointer: str
    scope: str
    parent: StepInfo | None
    id: str = field(init=False)
    uses: str = field(init=False)
    needs: list[str] = field(init=False)

    def __post_init__(self) -> None:
        step = self.step
        value = step.get("id")
        self.id = value if isinstance(value, str) else ""
        value = step.get("uses")
        self.uses = value if isinstance(value, str) else ""
        value = step.get("needs")
        self.needs = [n for n in value if isinstance(n, str)] if isinstance(value, list) \
            else []

    @property
    def max_visits(self) -> int:
        value = self.step.get("maxVisits", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1

    @property
    def with_(self) -> dict[str, Any]:
        value = self.step.get("with")
        return value if isinstance(value, dict) else {}

    @property
    def repair(self) -> dict[str, Any]:
        """Its `onFailure.repair` ({} where it has none)."""
        on_failure = self.step.get("onFailure")
        value = on_failure.get("repair") if isinstance(on_failure, dict) else None
        return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class TemplateSite:
    """A string that holds `{{ }}`: where it is, which step owns it, what it parses to."""

    pointer: str
    value: str
    owner: StepInfo | None
    template: Template | None
    error: ExprSyntaxError | None
    _references: list[Reference] | None = None

    def references(self) -> list[Reference]:
        """What the template reads (computed once; several rules ask)."""
        if self._references is None:
            self._references = [] if self.template is None else [
                ref for part in self.template.expressions for ref in references(part)]
        return self._references


@dataclass
class Context:
    """One document under validation. Rules read it; `finding` makes their findings."""

    document: Document
    kind: str
    code: str = ""  # stamped by the registry before each rule runs
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def value(self) -> Any:
        return self.document.value

    @property
    def path(self) -> str:
        return self.document.path

    def permitted(self, kind: str) -> set[str]:
        """The names listed in `permissions.<kind>` (`tools`, `models`)."""
        permissions = self.value.get("permissions") if isinstance(self.value, dict) else None
        listed = permissions.get(kind) if isinstance(permissions, dict) else None
        return {n for n in listed if isinstance(n, str)} if isinstance(listed, list) else set()

    def finding(self, pointer: str, message: str, *, key: bool = False,
                span: Span | None = None, severity: Severity = Severity.ERROR) -> Finding:
        """A finding of the running rule at `pointer` (its key when `key`)."""
        source_map = self.document.source_map
        if span is None:
            span = source_map.key_span(pointer) if key else source_map.span(pointer)
        return Finding(self.code, message, self.path, pointer, span, severity)

    # -- steps ---------------------------------------------------------------------------

    @cached_property
    def steps(self) -> list[StepInfo]:
        """Every step (parallel bodies included), parents before their bodies."""
        found: list[StepInfo] = []
        todo: list[tuple[Any, str, str, StepInfo | None]] = [
            (self.value.get("steps") if isinstance(self.value, dict) else None, "/steps", TOP,
             None)]
        while todo:
            items, pointer, scope, parent = todo.pop(0)
            if not isinstance(items, list):
                continue
            for index, step in enumerate(items):
                if not isinstance(step, dict):
                    continue
                info = StepInfo(step, f"{pointer}/{index}", scope, parent)
                found.append(info)
                if step.get("uses") == "parallel":
                    todo.append((step.get("steps"), f"{info.pointer}/steps", info.pointer, info))
        return found

    @cached_property
    def scopes(self) -> dict[str, dict[str, StepInfo]]:
        """scope id -> step id -> the first step with that id in that scope."""
        result: dict[str, dict[str, StepInfo]] = {}
        for info in self.steps:
            result.setdefault(info.scope, {}).setdefault(info.id, info)
        return result

    def in_scope(self, scope: str) -> dict[str, StepInfo]:
        return self.scopes.get(scope, {})

    # -- templates -----------------------------------------------------------------------

    @cached_property
    def templates(self) -> list[TemplateSite]:
        """Every `{{ }}` string in step `input`, `with` (not code.run file contents)."""
        sites: list[TemplateSite] = []
        for info in self.steps:
            for name in ("input", "with"):
                if name in info.step:
                    skip = "files" if name == "with" and info.uses == "code.run" else None
                    _add_template_sites(sites, info, name, skip)
        return sites

    def step_references(self) -> Iterator[tuple[TemplateSite, StepInfo, Reference]]:
        """Every `steps.<id>` reference, with its site and the step that owns it."""
        for site in self.templates:
            if site.owner is None:
                continue
            for ref in site.references():
                if ref.step is not None:
                    yield site, site.owner, ref

    def expression_nodes(self) -> list[tuple[TemplateSite, Part, ast.Node]]:
        """Every AST node of every parsed expression, with its site and part (walked
        once; several rules ask)."""
        found: list[tuple[TemplateSite, Part, ast.Node]] | None = self._cache.get("nodes")
        if found is None:
            found = self._cache["nodes"] = [
                (site, part, node) for site in self.templates
                for part in (site.template.expressions if site.template else ())
                for node in (ast.walk(part.node) if part.node else ())]
        return found

    def template_errors(self, code: str) -> Iterator[Finding]:
        """A finding of the running rule for each template that failed with `code`."""
        for site in self.templates:
            error = site.error
            if error is not None and error.code == code:
                yield self.site_finding(site, error.offset, error.offset + 1, error.message)

    def site_at(self, pointer: str) -> TemplateSite | None:
        """The template site of a string that holds `{{`, if any."""
        by_pointer = self._cache.get("sites")
        if by_pointer is None:
            by_pointer = self._cache["sites"] = {site.pointer: site for site in self.templates}
        found: TemplateSite | None = by_pointer.get(pointer)
        return found

    def expression_span(self, site_pointer: str, value: str, start: int, end: int) -> Span:
        """The file span of characters start..end of a string value (offsets in the value).

        Approach: find the value's raw text in the file and the same `{{` occurrence in
        it, then count from there; exact for plain, quoted and block scalars unless an
        escape sequence stands inside the expression before the offset (approximate then).
        """
        source_map = self.document.source_map
        entry = source_map.entries.get(site_pointer)
        if entry is None:
            return source_map.span(site_pointer)
        raw_start, raw_end = entry[0], entry[1]
        raw = self.document.text[raw_start:raw_end]
        nth = value.count("{{", 0, start)
        anchor_in_value = _nth_index(value, "{{", nth - 1) if nth else 0
        anchor_in_raw = _nth_index(raw, "{{", nth - 1) if nth else 0
        if anchor_in_raw < 0 or anchor_in_value < 0:
            return source_map.span(site_pointer)
        to_pos = source_map.to_pos
        begin = raw_start + anchor_in_raw + (start - anchor_in_value)
        finish = raw_start + anchor_in_raw + (end - anchor_in_value)
        return Span(Pos(*to_pos(begin)), Pos(*to_pos(max(finish, begin + 1))))

    def site_finding(self, site: TemplateSite, start: int, end: int, message: str) -> Finding:
        return self.finding(site.pointer, message,
                            span=self.expression_span(site.pointer, site.value, start, end))


def did_you_mean(name: str, known: Any) -> str:
    """`; did you mean 'needs'?` for the nearest of `known` names, else nothing."""
    import difflib

    near = difflib.get_close_matches(name, sorted(str(k) for k in known), n=1, cutoff=0.6)
    return f"; did you mean '{near[0]}'?" if near else ""


def _nth_index(text: str, needle: str, n: int) -> int:
    index = -1
    for _ in range(n + 1):
        index = text.find(needle, index + 1)
        if index < 0:
            return -1
    return index


def _site(pointer: str, text: str, owner: StepInfo | None) -> TemplateSite:
    try:
        return TemplateSite(pointer, text, owner, parse_template(text), None)
    except ExprSyntaxError as exc:
        return TemplateSite(pointer, text, owner, None, exc)


def template_site(pointer: str, text: str, owner: StepInfo | None) -> TemplateSite:
    """Parse one string that must be (or may hold) a template, outside `templates`."""
    return _site(pointer, text, owner)


_Link = tuple["_Link", "str | int"] | None


def _add_template_sites(sites: list[TemplateSite], info: StepInfo, name: str,
                        skip: str | None) -> None:
    """A site for every string holding `{{` in the step's `name` value (not under its
    top-level key `skip`); a pointer is written only for those. One loop, no generator
    a value: every step has two such values to look through; only containers are
    pushed (most scalars hold no template)."""
    top = info.step[name]
    if not isinstance(top, (dict, list)):
        if isinstance(top, str) and has_template(top):
            sites.append(_site(f"{info.pointer}/{name}", top, info))
        return
    todo: list[tuple[Any, _Link]] = [(top, None)]
    while todo:
        current, link = todo.pop()
        items = current.items() if isinstance(current, dict) else enumerate(current)
        for key, item in items:
            if link is None and key == skip:
                continue
            if isinstance(item, str):
                if has_template(item):
                    parts: list[str | int] = [key]
                    up = link
                    while up is not None:
                        up, part = up
                        parts.append(part)
                    sites.append(_site(f"{info.pointer}/{name}"
                                       f"{jp.from_parts(reversed(parts))}", item, info))
            elif isinstance(item, (dict, list)):
                todo.append((item, (link, key)))

"""Checking a planner's draft: needs inference first, then the validator; what is wrong
comes back as compact, model-oriented findings (code, JSON Pointer, the offending text
and a concrete next step taken from the rule's own "Instead" guidance)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from lwtool.planner.grant import Grant, excesses
from lwtool.planner.needs import AddedNeed, infer_needs

MAX_TEXT = 240
MAX_FINDINGS = 20
# A draft's compact JSON: far below the 8 MiB a file may have, so the YAML it is written
# as (indented, a few times larger) still validates and `lwtool check` reads it.
MAX_DRAFT_BYTES = 1024 * 1024


@dataclass
class DraftCheck:
    lwir: Any
    findings: list[dict[str, Any]] = field(default_factory=list)
    added_needs: list[AddedNeed] = field(default_factory=list)
    notes: list[Any] = field(default_factory=list)  # the valid draft's warnings (Findings)

    @property
    def ok(self) -> bool:
        return not self.findings


def check_draft(draft: Any, grant: Grant | None = None) -> DraftCheck:
    """The draft with inferred needs and its error findings (none: it is valid LWIR
    and, with a `grant`, asks for nothing the definition does not grant)."""
    from lwtool.source.finding import Severity
    from lwtool.source.loader import LoadFailed, load_text
    from lwtool.validate.run import document_kind, validate_document

    if not isinstance(draft, dict):
        return DraftCheck(draft, [_finding("lwir.invalid_field", "", "the workflow must be "
                                           "a JSON object (an LWIR document)", draft)])
    lwir: dict[str, Any] = draft
    added: list[AddedNeed] = []
    try:
        lwir, added = infer_needs(draft)
    except Exception:  # noqa: BLE001 - a draft too broken to infer from is validated as is
        lwir, added = draft, []
    text = json.dumps(lwir, ensure_ascii=False)
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DRAFT_BYTES:
        return DraftCheck(lwir, [_finding("parse.too_large", "", "the workflow is larger than "
                                          f"{MAX_DRAFT_BYTES // 1024} KiB as JSON; a plan is "
                                          "a graph of steps, not data: keep it small", None)])
    try:
        document = load_text(text, "<draft>.json")
    except (LoadFailed, TypeError, ValueError) as exc:
        found = getattr(exc, "findings", None) or []
        return DraftCheck(lwir, [_finding(f.code, f.pointer, f.message, None) for f in found]
                          or [_finding("parse.invalid", "", str(exc), None)])
    every = validate_document(document)
    findings = [f for f in every if f.severity is Severity.ERROR]
    if document_kind(document) != "Workflow" and not findings:
        findings_json = [_finding("lwir.unknown_kind", "/kind", "kind must be Workflow",
                                  lwir.get("kind"))]
        return DraftCheck(lwir, findings_json, added)
    over = [_finding(e.code, e.pointer, e.message, e.text)
            for e in excesses(lwir, grant)] if grant is not None else []
    compact = over + [_finding(f.code, f.pointer, f.message, _at(lwir, f.pointer))
                      for f in findings[:MAX_FINDINGS]]
    return DraftCheck(lwir, compact[:MAX_FINDINGS], added,
                      [f for f in every if f.severity is not Severity.ERROR])


def _finding(code: str, pointer: str, message: str, text: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"code": code, "pointer": pointer or "/", "message": message}
    if text is not None:
        shown = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False,
                                                              default=str)
        entry["text"] = shown if len(shown) <= MAX_TEXT else shown[:MAX_TEXT] + "…"
    hint = next_step(code)
    if hint:
        entry["fix"] = hint
    return entry


def _at(value: Any, pointer: str) -> Any:
    """The value a JSON Pointer names (None when it names nothing)."""
    for part in [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return None
    return value


@cache
def next_step(code: str) -> str:
    """A rule's "## Why" in one line, then what to do instead, from its docstring."""
    from lwtool.validate.registry import rules

    rule = next((r for r in rules() if r.code == code), None)
    if rule is None:
        return ""
    sections = dict(re.findall(r"## (\w[\w ]*)\n(.*?)(?=\n## |\Z)", rule.doc, re.S))
    why = " ".join(sections.get("Why", "").split())
    instead = sections.get("Instead", "").strip().strip("`").removeprefix("yaml").strip()
    hint = why + (f" Instead, e.g.:\n{instead}" if instead else "")
    return hint[:600]


def rejection(check: DraftCheck) -> dict[str, Any]:
    """The submit tool's answer to a draft that is not valid."""
    return {"accepted": False, "findings": check.findings,
            "next": "Fix every finding and call the tool again with the whole document."}

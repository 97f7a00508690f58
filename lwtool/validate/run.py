"""Validate a loaded document: dispatch on `kind`, run every rule, sort the findings."""

from __future__ import annotations

import gc
from pathlib import Path

from lwtool.source.finding import Finding
from lwtool.source.loader import Document, LoadFailed, load_path
from lwtool.source.position import FILE_START
from lwtool.validate.context import Context
from lwtool.validate.registry import rules

KINDS = ("Workflow", "WorkflowDefinition", "Pipeline")


def document_kind(document: Document) -> str | None:
    value = document.value
    kind = value.get("kind") if isinstance(value, dict) else None
    return kind if kind in KINDS else None


def validate_document(document: Document, nested: bool = False) -> list[Finding]:
    """All findings for a loaded document, sorted by (path, line, column, code).
    `nested`: a child workflow read for its parent's lock (lwtool.validate.children):
    its own children are the lock's to read."""
    findings = list(document.findings)
    kind = document_kind(document)
    if kind is None:
        findings.append(_unknown_kind(document))
        return sorted(findings, key=Finding.sort_key)
    ctx = Context(document, kind)
    if nested:
        ctx._cache["children.nested"] = True
    for rule in rules():
        if kind not in rule.applies_to:
            continue
        ctx.code = rule.code
        findings.extend(rule.check(ctx))
    return sorted(findings, key=Finding.sort_key)


def _unknown_kind(document: Document) -> Finding:
    value = document.value
    if not isinstance(value, dict):
        return Finding("lwir.unknown_kind", "the document must be a mapping with a kind "
                       "(Workflow or WorkflowDefinition)", document.path, "",
                       document.source_map.span(""))
    if "kind" not in value:
        return Finding("lwir.unknown_kind", "missing 'kind' (Workflow or WorkflowDefinition)",
                       document.path, "", FILE_START)
    return Finding("lwir.unknown_kind", f"kind '{value.get('kind')}' is neither Workflow nor "
                   "WorkflowDefinition", document.path, "/kind",
                   document.source_map.span("/kind"))


def load_and_validate(path: str | Path) -> tuple[Document | None, list[Finding]]:
    """Load then validate; (None, findings) when the file does not load. OSError passes.

    The cyclic garbage collector is paused meanwhile: validation allocates tens of
    thousands of short-lived, acyclic objects, and collections triggered by them only
    rescan the document again and again (they made timings vary by a third).
    """
    paused = gc.isenabled()
    gc.disable()
    try:
        try:
            document = load_path(path)
        except LoadFailed as failed:
            return None, failed.findings
        return document, validate_document(document)
    finally:
        if paused:
            gc.enable()

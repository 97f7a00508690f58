"""Findings as text, JSON or SARIF 2.1.0 (the only place that formats them)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from lwtool.observe.terminal import safe_text
from lwtool.source.finding import Finding, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://littleworkflow.dev/lwtool"
RULES_URI = f"{INFORMATION_URI}/docs/rules"  # docs/rules.md: one heading per code
FINGERPRINT = "lwtoolFinding/v1"


class FileReport:
    def __init__(self, path: str, findings: Sequence[Finding]) -> None:
        self.path = path
        self.findings = list(findings)

    @property
    def valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)


def render_text(reports: Sequence[FileReport]) -> str:
    """A line a finding, ending with where its rule is explained."""
    lines = [safe_text(f"{f.as_text()} [lwtool explain {f.code}]")
             for r in reports for f in r.findings]
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(reports: Sequence[FileReport]) -> str:
    files = [{"path": r.path, "valid": r.valid, "findings": [f.as_json() for f in r.findings]}
             for r in reports]
    return json.dumps({"files": files}, indent=2, ensure_ascii=False) + "\n"


_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_sarif(reports: Sequence[FileReport]) -> str:
    """SARIF 2.1.0 for code scanning: columns in code points, a fingerprint per result
    that survives edits elsewhere in the file (rule, file and JSON Pointer, not the
    line), and each rule's explanation as help text and Markdown with a link."""
    from lwtool._version import __version__
    from lwtool.validate.registry import rule_help

    helped = rule_help()
    used = sorted({f.code for r in reports for f in r.findings})
    results: list[dict[str, Any]] = []
    for report in reports:
        for f in report.findings:
            results.append({
                "ruleId": f.code,
                "level": _LEVELS[f.severity],
                "message": {"text": f.message},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path},
                        "region": {"startLine": f.line, "startColumn": f.column,
                                   "endLine": f.span.end.line, "endColumn": f.span.end.column},
                    },
                    "logicalLocations": [{"fullyQualifiedName": f.pointer or "/"}],
                }],
                "partialFingerprints": {FINGERPRINT: _fingerprint(f)},
            })
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "lwtool",
                "version": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule(code, *helped.get(code, (code, code))) for code in used],
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"


def _rule(code: str, summary: str, markdown: str) -> dict[str, Any]:
    return {"id": code, "name": "".join(part.capitalize() for part in
                                        code.replace(".", "_").split("_")),
            "shortDescription": {"text": summary},
            "fullDescription": {"text": summary},
            "help": {"text": _plain(markdown), "markdown": markdown},
            "helpUri": f"{RULES_URI}#{code.replace('.', '').lower()}"}


def _plain(markdown: str) -> str:
    """Markdown help as plain text: headings and fences dropped, code spans unquoted."""
    lines = [line for line in markdown.splitlines() if not line.startswith("```")]
    return "\n".join(line.lstrip("#").strip() if line.startswith("#") else line
                     for line in lines).replace("`", "")


def _fingerprint(finding: Finding) -> str:
    """What identifies a finding across commits: its rule, file and JSON Pointer (the
    line moves when lines are added above it); the position when it has no pointer."""
    where = finding.pointer if finding.pointer else f"{finding.line}:{finding.column}"
    material = f"{finding.code}\0{finding.path}\0{where}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(material).hexdigest()


def render(reports: Sequence[FileReport], fmt: str) -> str:
    return {"text": render_text, "json": render_json, "sarif": render_sarif}[fmt](reports)


def say(message: str, lead: str = "lwtool: ") -> None:
    """One line on stderr, `lead` first (stdout is the command's result): a progress
    line, or one clear sentence for an error. Its control characters are escaped: a
    message carries text from runs, models and files."""
    sys.stderr.write(f"{lead}{safe_text(message)}\n")
    sys.stderr.flush()


error = say

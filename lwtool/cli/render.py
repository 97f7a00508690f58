"""Findings as text, JSON or SARIF 2.1.0 (the only place that formats them)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from typing import Any

from lwtool.validate.finding import Finding, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


class FileReport:
    def __init__(self, path: str, findings: Sequence[Finding]) -> None:
        self.path = path
        self.findings = list(findings)

    @property
    def valid(self) -> bool:
        return not any(f.severity is Severity.ERROR for f in self.findings)


def render_text(reports: Sequence[FileReport]) -> str:
    lines = [f.as_text() for r in reports for f in r.findings]
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(reports: Sequence[FileReport]) -> str:
    files = [{"path": r.path, "valid": r.valid, "findings": [f.as_json() for f in r.findings]}
             for r in reports]
    return json.dumps({"files": files}, indent=2, ensure_ascii=False) + "\n"


_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def render_sarif(reports: Sequence[FileReport]) -> str:
    from lwtool import __version__
    from lwtool.validate.registry import all_codes

    codes = all_codes()
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
            })
    sarif = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "lwtool",
                "version": __version__,
                "informationUri": "https://littleworkflow.dev/lwtool",
                "rules": [{"id": code, "shortDescription": {"text": codes.get(code, code)}}
                          for code in used],
            }},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"


def render(reports: Sequence[FileReport], fmt: str) -> str:
    return {"text": render_text, "json": render_json, "sarif": render_sarif}[fmt](reports)


# C0 and C1 controls (and DEL): run data (item keys, tool messages) could otherwise move
# the cursor, recolour or clear a terminal. Tab and newline inside a message are escaped
# too, so an error stays one line.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def safe_text(text: str) -> str:
    """`text` with control characters shown as escapes (`\x1b`, `\n`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def error(message: str) -> None:
    """One clear sentence on stderr (control characters escaped)."""
    sys.stderr.write(f"lwtool: {safe_text(message)}\n")

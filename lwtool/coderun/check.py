"""`lwtool validate --check-code`: type-check every code.run step's TypeScript with
`deno check` (offline: no remote or npm modules) and report each error as a finding
(`code.type_error`) at the position of the offending character inside the LWIR file,
where the content is a YAML block or a JSON/YAML double-quoted string; elsewhere at the
file's `content` value. Implicit `any` is allowed (the spec's own examples leave
`run({ input, tools })` untyped); every other strict check applies. One `deno check`
process serves every step of every file.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

from lwtool.coderun.deno import deno_binary, deno_cache_dir
from lwtool.coderun.policy import CodePolicy
from lwtool.source.finding import Finding
from lwtool.source.loader import Document
from lwtool.source.pointer import escape
from lwtool.source.position import Pos, Span

CODE = "code.type_error"
CHECKED = (".ts", ".tsx", ".mts", ".cts")
_ERROR = re.compile(r"^(TS\d+) \[ERROR\]: (.*?)\n(?:.*\n)*?\s+at file://(/[^\n]+?):(\d+):(\d+)$",
                    re.MULTILINE)
_CONFIG = {"compilerOptions": {"strict": True, "noImplicitAny": False}}


class CodeCheckUnavailable(Exception):
    """deno check could not run (no Deno, or it failed on its own)."""


def check_code(documents: list[Document]) -> list[Finding]:
    with tempfile.TemporaryDirectory(prefix="lwtool-check-") as tmp:
        root = Path(tmp)
        where = _write_sources(root, documents)
        if not where:
            return []
        (root / "deno.json").write_text(json.dumps(_CONFIG))
        try:
            done = subprocess.run(
                [deno_binary(), "check", "--no-remote", "--no-npm", "--quiet", "--config",
                 str(root / "deno.json"), *where], capture_output=True, text=True,
                cwd=root, timeout=300, env=CodePolicy().environment(deno_cache_dir()))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CodeCheckUnavailable(f"deno check did not run: {exc}") from None
        findings = []
        for match in _ERROR.finditer(done.stdout + done.stderr):
            ts_code, message, file, line, column = match.groups()
            origin = where.get(file)
            if origin is None:
                continue
            document, pointer = origin
            span = _position(document, pointer, int(line), int(column))
            findings.append(Finding(CODE, f"{ts_code}: {message}", document.path, pointer, span))
        if done.returncode != 0 and not findings:
            raise CodeCheckUnavailable("deno check failed: " + (done.stderr or done.stdout)[-800:])
        return findings


def _write_sources(root: Path, documents: list[Document]) -> dict[str, tuple[Document, str]]:
    """Every code.run file under `root/d<doc>/s<step>/`; the TypeScript ones -> where
    they stand (document, pointer of their content). Names leaving the folder are
    skipped."""
    from lwtool.validate.context import Context

    where: dict[str, tuple[Document, str]] = {}
    for d, document in enumerate(documents):
        if not isinstance(document.value, dict):
            continue
        for s, info in enumerate(Context(document, "Workflow").steps):
            files = info.with_.get("files") if info.uses == "code.run" else None
            if not isinstance(files, dict):
                continue
            folder = (root / f"d{d}" / f"s{s}").resolve()
            for name, file in files.items():
                content = file.get("content") if isinstance(file, dict) else None
                target = (folder / str(name)).resolve()
                if not isinstance(content, str) or not target.is_relative_to(folder):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
                if target.suffix in CHECKED:
                    where[str(target)] = (
                        document, f"{info.pointer}/with/files/{escape(str(name))}/content")
    return where


def _position(document: Document, pointer: str, line: int, column: int) -> Span:
    """Line/column inside the string at `pointer` -> a span in the document."""
    located = document.source_map.nearest(pointer)
    start = located.span.start
    lines = document.text.splitlines()
    if located.style == "|":
        body = start.line + line  # the block's text starts on the line after `|`
        if body - 1 < len(lines):
            text = lines[body - 1]
            indent = len(text) - len(text.lstrip(" "))
            pos = Pos(body, indent + column)
            return Span(pos, Pos(body, indent + column + 1))
    if located.style == '"' or (document.format == "json" and located.style is not None):
        found = _in_quoted(lines, start, line, column)
        if found is not None:
            return Span(found, Pos(found.line, found.column + 1))
    return located.span


def _in_quoted(lines: list[str], start: Pos, line: int, column: int) -> Pos | None:
    """Walk a double-quoted string from its opening quote, decoding escapes, to the
    character at content (line, column)."""
    row, col = start.line, start.column  # at the opening quote
    seen_line, seen_col = 1, 1
    text = lines[row - 1] if row - 1 < len(lines) else ""
    i = col  # index after the quote (col is 1-based)
    while row - 1 < len(lines):
        if i >= len(text):
            row += 1
            if row - 1 >= len(lines):
                return None
            text, i = lines[row - 1], 0
            continue
        if (seen_line, seen_col) == (line, column):
            return Pos(row, i + 1)
        char = text[i]
        if char == '"':
            return None
        if char == "\\" and i + 1 < len(text):
            escaped = text[i + 1]
            i += 6 if escaped == "u" else 2
            if escaped == "n":
                seen_line, seen_col = seen_line + 1, 1
                continue
        else:
            i += 1
        seen_col += 1
    return None

"""What `lwtool validate` does, without typer: the command (lwtool.cli.validate) calls
it, and so does the console entry straight from argv when the arguments are ones it
reads itself (`fast_argv`), so a cold `lwtool validate FILE` never imports the CLI
framework (~35 ms of a ~100 ms start)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lwtool.cli import exit_codes
from lwtool.cli.render import FileReport, error, render

FORMATS = ("text", "json", "sarif")  # lwtool.cli.options.Format


class _Usage(Exception):
    """Said already; the command ends with exit code 2."""


def validate_paths(paths: list[Path], fmt: str = "text", check_code: bool = False,
                   portable: bool = False, tools: list[str] | None = None) -> int:
    """Validate the files (folders: the workflow files in them), print the findings in
    `fmt`; returns the exit code."""
    try:
        reports = _reports(paths or [Path(".")], check_code, portable, tools)
    except _Usage:
        return exit_codes.USAGE
    sys.stdout.write(render(reports, fmt))
    sys.stdout.flush()
    return exit_codes.OK if all(r.valid for r in reports) else exit_codes.INVALID


def fast_argv(args: list[str]) -> tuple[list[Path], str, bool, bool] | None:
    """`validate`'s arguments read without typer: (paths, format, check_code,
    portable); None when any is not a plain path or one of those options (`--help`,
    `--tools`, whose missing extras lwtool.cli.app explains, a typo, a format it does
    not know), which typer then reads and answers."""
    paths: list[Path] = []
    fmt, check_code, portable = "text", False, False
    rest = iter(args)
    for arg in rest:
        name, equals, inline = arg.partition("=")
        if arg == "--":
            paths += [Path(p) for p in rest]
        elif name == "--format" or arg == "-f":
            value = inline if equals else next(rest, None)
            if value not in FORMATS:
                return None
            fmt = str(value)
        elif arg == "--check-code":
            check_code = True
        elif arg == "--portable":
            portable = True
        elif arg.startswith("-") or not arg:
            return None
        else:
            paths.append(Path(arg))
    return paths, fmt, check_code, portable


def _reports(paths: list[Path], check_code: bool, portable: bool,
             tools: list[str] | None) -> list[FileReport]:
    from lwtool.compile import compile_file
    from lwtool.lock.paths import discover

    try:
        files = discover(paths)
    except FileNotFoundError as exc:
        error(f"cannot read {exc.filename}: no such file or folder")
        raise _Usage from None
    if not files:
        error(f"no workflow files in {', '.join(str(p) for p in paths)} "
              "(*.lwir.yaml, *.workflow.yaml, *.definition.yaml, *.pipeline.yaml)")
        raise _Usage
    reports = []
    loaded: list[Any] = []  # each file's Compiled (None for a lock)
    for path in files:
        if path.name.lower().endswith(".lock.json"):
            from lwtool.lock.drift import lock_file_findings  # a lock: read as one

            reports.append(FileReport(str(path), lock_file_findings(path)))
            loaded.append(None)
            continue
        try:
            compiled = compile_file(path)
        except OSError as exc:
            error(f"cannot read {path}: {exc.strerror or exc}")
            raise _Usage from None
        reports.append(FileReport(str(path), compiled.findings))
        loaded.append(compiled)
    if check_code:
        _type_check(reports, [c.document if c is not None and c.kind == "Workflow" else None
                              for c in loaded])
    if tools:
        _check_provided(reports, loaded, tools)
    if portable:
        from lwtool.validate.portable import portable_findings

        for report, compiled in zip(reports, loaded, strict=True):
            if compiled is not None and compiled.document is not None:
                report.findings.extend(portable_findings(compiled.document, compiled.kind))
                report.findings.sort(key=lambda f: f.sort_key())
    return reports


def _check_provided(reports: list[FileReport], loaded: list[Any], tools: list[str]) -> None:
    """Add `tools.unavailable` findings for declared tools the given tools lack."""
    from lwtool.cli.runtime_options import load_tool_registry
    from lwtool.validate.provided import declared_tools, unavailable_tools, unenforced_network

    declared = sorted({str(name) for compiled in loaded if compiled is not None
                       and compiled.document is not None
                       for name in declared_tools(compiled.document, compiled.kind)[0]})
    registry = load_tool_registry(tools, declared)  # only the servers the files name
    provided = registry.names()
    for report, compiled in zip(reports, loaded, strict=True):
        if compiled is not None and compiled.document is not None:
            report.findings.extend(unavailable_tools(compiled.document, compiled.kind,
                                                     provided))
            report.findings.extend(unenforced_network(compiled.document, compiled.kind,
                                                      registry.tools))
            report.findings.sort(key=lambda f: f.sort_key())


def _type_check(reports: list[FileReport], documents: list[Any]) -> None:
    """Add `deno check` findings to the reports of the files that loaded as LWIR."""
    from lwtool.coderun.check import CodeCheckUnavailable, check_code
    from lwtool.coderun.deno import DenoMissing

    loaded = [d for d in documents if d is not None]
    try:
        found = check_code(loaded)
    except (CodeCheckUnavailable, DenoMissing) as exc:
        error(str(exc))
        raise _Usage from None
    for report, document in zip(reports, documents, strict=True):
        if document is not None:
            report.findings.extend(f for f in found if f.path == document.path)
            report.findings.sort(key=lambda f: f.sort_key())

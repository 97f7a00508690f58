"""`lwtool validate PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import Format
from lwtool.cli.render import FileReport, error, render


def validate(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="LWIR, WorkflowDefinition or Pipeline files, or folders (default: the current "
        "folder, as `lwtool check` reads it).")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    check_code: Annotated[bool, typer.Option(
        "--check-code", help="Also type-check code.run sources with deno check (offline; "
        "errors at their position in the file).")] = False,
    portable: Annotated[bool, typer.Option(
        "--portable", help="Also report each use of an lwtool extension (human.input, "
        "timeoutMs, retry, sandbox limits, expression functions beyond sha256 and "
        "coalesce, runtime, ...) as a portable.extension warning.")] = False,
    tools: Annotated[list[str] | None, typer.Option(
        "--tools", metavar="MODULE:ATTR|SERVERS.json",
        help="Also check that every tool the files declare is provided: a module's "
        "registry or an MCP servers file (its servers are started and listed); "
        "repeatable.")] = None,
) -> None:
    """Validate LWIR, WorkflowDefinition and Pipeline files; print findings with positions.

    In folders (the current one when no path is given): every *.lwir.*, *.workflow.*,
    *.definition.* and *.pipeline.* file and every file with a lock beside it."""
    from lwtool.compile import compile_file
    from lwtool.lock.paths import discover

    try:
        files = discover(paths or [Path(".")])
    except FileNotFoundError as exc:
        error(f"cannot read {exc.filename}: no such file or folder")
        raise typer.Exit(exit_codes.USAGE) from None
    if not files:
        error(f"no workflow files in {', '.join(str(p) for p in paths or [Path('.')])} "
              "(*.lwir.yaml, *.workflow.yaml, *.definition.yaml, *.pipeline.yaml)")
        raise typer.Exit(exit_codes.USAGE)
    reports = []
    documents: list[Any] = []
    loaded: list[Any] = []  # each file's Compiled (None for a lock)
    for path in files:
        if path.name.lower().endswith(".lock.json"):
            from lwtool.lock.drift import lock_file_findings  # a lock: read as one

            reports.append(FileReport(str(path), lock_file_findings(path)))
            documents.append(None)
            loaded.append(None)
            continue
        try:
            compiled = compile_file(path)
        except OSError as exc:
            error(f"cannot read {path}: {exc.strerror or exc}")
            raise typer.Exit(exit_codes.USAGE) from None
        reports.append(FileReport(str(path), compiled.findings))
        documents.append(compiled.document if compiled.kind == "Workflow" else None)
        loaded.append(compiled)
    if check_code:
        _type_check(reports, documents)
    if tools:
        _check_provided(reports, loaded, tools)
    if portable:
        from lwtool.validate.portable import portable_findings

        for report, compiled in zip(reports, loaded, strict=True):
            if compiled is not None and compiled.document is not None:
                report.findings.extend(portable_findings(compiled.document, compiled.kind))
                report.findings.sort(key=lambda f: f.sort_key())
    typer.echo(render(reports, format.value), nl=False)
    raise typer.Exit(exit_codes.OK if all(r.valid for r in reports) else exit_codes.INVALID)


def _check_provided(reports: list[FileReport], loaded: list[Any], tools: list[str]) -> None:
    """Add `tools.unavailable` findings for declared tools the given tools lack."""
    from lwtool.cli.runtime_options import load_tool_registry
    from lwtool.validate.provided import declared_tools, unavailable_tools

    declared = sorted({str(name) for compiled in loaded if compiled is not None
                       and compiled.document is not None
                       for name in declared_tools(compiled.document, compiled.kind)[0]})
    registry = load_tool_registry(tools, declared)  # only the servers the files name
    provided = registry.names()
    for report, compiled in zip(reports, loaded, strict=True):
        if compiled is not None and compiled.document is not None:
            report.findings.extend(unavailable_tools(compiled.document, compiled.kind,
                                                     provided))
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
        raise typer.Exit(exit_codes.USAGE) from None
    for report, document in zip(reports, documents, strict=True):
        if document is not None:
            report.findings.extend(f for f in found if f.path == document.path)
            report.findings.sort(key=lambda f: f.sort_key())

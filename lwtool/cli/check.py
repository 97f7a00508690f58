"""`lwtool check [PATH...]`: the CI check for committed LWIR."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import Format
from lwtool.cli.render import FileReport, error, render


def check(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders (default: the current folder).")] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Validate committed files and fail (lock.stale) where one no longer matches its lock.

    In folders, checks every file that has a lock beside it and every *.lwir.*,
    *.workflow.*, *.definition.* and *.pipeline.* file (YAML or JSON)."""
    from lwtool.lock.drift import check_file
    from lwtool.lock.paths import discover

    try:
        files = discover(paths or [Path(".")])
    except FileNotFoundError as exc:
        error(f"cannot read {exc.filename}: no such file or folder")
        raise typer.Exit(exit_codes.USAGE) from None
    reports = []
    for path in files:
        try:
            reports.append(FileReport(str(path), check_file(path)))
        except OSError as exc:
            error(f"cannot read {path}: {exc.strerror or exc}")
            raise typer.Exit(exit_codes.USAGE) from None
    typer.echo(render(reports, format.value), nl=False)
    if format is Format.text:
        bad = sum(not r.valid for r in reports)
        typer.echo(f"checked {len(reports)} file(s): {bad} failing", err=True)
    raise typer.Exit(exit_codes.OK if all(r.valid for r in reports) else exit_codes.INVALID)

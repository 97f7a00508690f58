"""`lwtool validate PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import Format
from lwtool.cli.render import FileReport, error, render


def validate(
    paths: Annotated[list[Path], typer.Argument(help="LWIR or WorkflowDefinition files.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Validate LWIR and WorkflowDefinition files; print findings with positions."""
    from lwtool.compile import compile_file

    reports = []
    for path in paths:
        try:
            compiled = compile_file(path)
        except IsADirectoryError:
            error(f"{path} is a directory; name the files to validate (or use lwtool check)")
            raise typer.Exit(exit_codes.USAGE) from None
        except OSError as exc:
            error(f"cannot read {path}: {exc.strerror or exc}")
            raise typer.Exit(exit_codes.USAGE) from None
        reports.append(FileReport(str(path), compiled.findings))
    typer.echo(render(reports, format.value), nl=False)
    raise typer.Exit(exit_codes.OK if all(r.valid for r in reports) else exit_codes.INVALID)

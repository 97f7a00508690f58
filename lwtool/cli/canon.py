"""`lwtool canon PATH` and `lwtool hash PATH`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.render import FileReport, error, render_text


def compiled_or_exit(path: Path,  # type: ignore[no-untyped-def]
                     doing: str = "nothing to canonicalize"):
    """The compiled file, or exit 2 (unreadable) / 1 (not valid, with its findings)."""
    from lwtool.compile import compile_file

    try:
        compiled = compile_file(path)
    except OSError as exc:
        error(f"cannot read {path}: {exc.strerror or exc}")
        raise typer.Exit(exit_codes.USAGE) from None
    if not compiled.ok:
        sys.stderr.write(render_text([FileReport(str(path), compiled.findings)]))
        error(f"{path} is not valid; {doing}")
        raise typer.Exit(exit_codes.INVALID)
    return compiled


def canon(path: Annotated[Path, typer.Argument(help="An LWIR or definition file.")]) -> None:
    """Print the RFC 8785 canonical JSON of a valid file."""
    sys.stdout.buffer.write(compiled_or_exit(path).canonical() + b"\n")


def hash_(path: Annotated[Path, typer.Argument(help="An LWIR or definition file.")]) -> None:
    """Print the WorkflowVersion id (sha256:<hex>) of an LWIR file (the
    WorkflowDefinitionHash of a definition)."""
    typer.echo(compiled_or_exit(path).digest())

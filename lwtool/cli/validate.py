"""`lwtool validate PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.options import Format


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
    from lwtool.cli.validate_files import validate_paths

    raise typer.Exit(validate_paths(paths or [], format.value, check_code, portable, tools))

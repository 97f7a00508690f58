"""`lwtool verify [RUN_ID]`: check a data dir's event chains, versions and artifacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import WorldOption
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import open_world, use_world, world_errors
from lwtool.observe.terminal import safe_text

VerifyJson = Annotated[bool, typer.Option(
    "--json", help="One JSON document: ok, runs, events, versions, artifacts (counts "
    "checked), problems [{subject, severity, message}], removed.")]


def verify(
    run_id: Annotated[str | None, typer.Argument(help="Check only this run.")] = None,
    clean: Annotated[bool, typer.Option("--clean", help="Delete orphan temp files left "
                                        "by killed writers, and lock files nobody holds.")] = False,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: VerifyJson = False,
) -> None:
    """Verify event hash chains, WorkflowVersion ids and artifact hashes; exit 1 when
    anything is damaged (orphan temp files are only warnings)."""
    use_world(world_url)
    from lwtool.world import verify as check

    world = open_world(data_dir, must_exist=True)
    try:
        with world_errors():
            result = check.verify(world, run_id, clean)
    finally:
        world.close()
    if as_json:
        typer.echo(json.dumps(result.as_json(), ensure_ascii=False, indent=2))
    else:
        for problem in result.problems:
            label = "damaged" if problem.severity == "error" else "warning"
            typer.echo(safe_text(f"{problem.subject}: {label}: {problem.message}"))
        for path in result.removed:
            what = "lock file nobody held" if path.endswith(".lock") else "orphan temp file"
            typer.echo(safe_text(f"{path}: removed ({what})"))
        errors = sum(p.severity == "error" for p in result.problems)
        typer.echo(f"verified {result.runs} run(s), {result.events} event(s), "
                   f"{result.versions} version(s), {result.artifacts} artifact(s): "
                   f"{'intact' if not errors else f'{errors} damaged'}")
    if result.damaged:
        raise typer.Exit(exit_codes.INVALID)

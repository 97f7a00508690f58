"""`lwtool explain CODE`: what a finding's rule flags, why, an example and what to write
instead (the rule's docstring, as docs/rules.md shows it)."""

from __future__ import annotations

import difflib
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.render import RULES_URI, error


def explain(code: Annotated[str, typer.Argument(
        help="A finding's code, as text findings end with (e.g. step.missing_dependency).")]
            ) -> None:
    """Print the explanation of a finding's code: What / Why / Example / Instead."""
    from lwtool.validate.registry import rule_help

    helped = rule_help()
    found = helped.get(code.strip())
    if found is None:
        near = difflib.get_close_matches(code.strip(), list(helped), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(near)}?" if near else \
            " (docs/rules.md lists every code)"
        error(f"no finding has the code '{code}'{hint}")
        raise typer.Exit(exit_codes.USAGE)
    summary, body = found
    typer.echo(f"{code.strip()}: {summary}\n")
    if body != summary:
        typer.echo(body.rstrip() + "\n")
    typer.echo(f"Every rule: docs/rules.md ({RULES_URI}#"
               f"{code.strip().replace('.', '').lower()})")

"""Options shared by several commands."""

from __future__ import annotations

import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.render import error


class Format(StrEnum):
    text = "text"
    json = "json"
    sarif = "sarif"


class Durability(StrEnum):
    strict = "strict"
    process = "process"


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    dot = "dot"


SecretsOption = Annotated[Path | None, typer.Option(
    "--secrets", envvar="LWTOOL_SECRETS",
    help="A dotenv file (NAME=value lines): the values of the secrets the workflow's "
    "permissions.secrets names. Default: the process environment.")]
ConfineOption = Annotated[bool, typer.Option(
    "--confine-tools", envvar="LWTOOL_CONFINE_TOOLS",
    help="Run Python tools (a process per call) and stdio MCP servers in bubblewrap with "
    "no network but a proxy that allows the workflow's permissions.network only.")]
WorldOption = Annotated[str | None, typer.Option(
    "--world", envvar="LWTOOL_WORLD",
    help="Where runs live: postgresql://USER@HOST/DB (the PostgreSQL world, `pip install "
    "'lwtool[postgres]'`; memory and scratch stay in --data-dir), or a local data dir "
    "(a path or file:PATH). Default: the local world in --data-dir.")]


OfflineOption = Annotated[bool, typer.Option(
    "--offline", help="Map every model slot (the planner's included) to lwtool's offline "
    "model: deterministic, schema-valid answers, no network, no key; as a planner it "
    "drafts a one-step workflow from the definition. --models entries still win.")]


def finite(param: typer.CallbackParam, value: float | None) -> float | None:
    """The callback of every float option: NaN and infinities are refused in one line
    (exit 2). Click takes `nan` and `inf` as floats, and a NaN passes any `min` (every
    comparison with it is false): `--max-cost-usd nan` would be no budget at all."""
    if value is not None and not math.isfinite(value):
        error(f"{param.opts[0]} takes a finite number, not {value}")
        raise typer.Exit(exit_codes.USAGE)
    return value


QUEUE_NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}"


def queue_names(param: typer.CallbackParam, value: str | list[str] | None
                ) -> str | list[str] | None:
    """The callback of `--queue`: names of letters, digits, `_ . -` (at most 63), one
    line and exit 2 otherwise."""
    import re

    for name in [value] if isinstance(value, str) else value or []:
        if not re.fullmatch(QUEUE_NAME, name):
            error(f"{param.opts[0]} takes a queue name (letters, digits, _ . -; at most "
                  f"63), not {name!r}")
            raise typer.Exit(exit_codes.USAGE)
    return value


QueueOption = Annotated[str | None, typer.Option(
    "--queue", callback=queue_names,
    help="With --enqueue: the queue the run waits on (default: `default`, or the queue a "
    "run was on before); only workers started with `--queue NAME` take it.")]

"""Options shared by several commands."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


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


WorldOption = Annotated[str | None, typer.Option(
    "--world", envvar="LWTOOL_WORLD",
    help="Where runs live: postgresql://USER@HOST/DB (the PostgreSQL world, `pip install "
    "'lwtool[postgres]'`; memory and scratch stay in --data-dir), or a local data dir "
    "(a path or file:PATH). Default: the local world in --data-dir.")]


OfflineOption = Annotated[bool, typer.Option(
    "--offline", help="Map every model slot (the planner's included) to lwtool's offline "
    "model: deterministic, schema-valid answers, no network, no key; as a planner it "
    "drafts a one-step workflow from the definition. --models entries still win.")]

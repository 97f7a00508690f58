"""`lwtool mcp`: serve lwtool's compiler to MCP clients on stdio (lwtool.mcp.serve)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.options import WorldOption
from lwtool.cli.render import say


def mcp(
    root: Annotated[Path | None, typer.Option(
        "--root", help="The folder the server serves: every path a client names is "
        "relative to it and must stay inside it (default: the working folder).")] = None,
    allow_code: Annotated[bool, typer.Option(
        "--allow-code", help="Let `plan` import the Python a definition names "
        "(planner.harness); off by default, as a repository's files may be hostile.")
    ] = False,
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", help="The local world `runs` and `events` read (and `plan` records "
        "its planner session in).")] = Path(".little-workflow"),
    world_url: WorldOption = None,
    models: Annotated[Path | None, typer.Option(
        "--models", help="YAML/JSON: slot id -> litellm model string, for `plan` "
        "without `offline`.")] = None,
    tools: Annotated[list[str] | None, typer.Option(
        "--tools", help="MODULE:ATTR or an MCP servers file: the tools `plan` may grant; "
        "repeatable.")] = None,
) -> None:
    """Serve lwtool as an MCP server on stdio, for coding agents and editors: tools
    validate, explain, graph, hash, canon, plan, and (read-only) runs and events. Add it
    to a client's mcpServers as {"command": "lwtool", "args": ["mcp"]}."""
    try:
        from lwtool.mcp.serve import serve
    except ImportError as exc:
        from lwtool.cli.extras import hint

        say(f"`lwtool mcp` needs the MCP SDK, which is not installed ({exc.name}): "
            f"{hint('mcp')}")
        raise typer.Exit(2) from None
    from lwtool.mcp.compiler import Served

    folder = (root or Path.cwd()).expanduser()
    if not folder.is_dir():
        say(f"--root {folder} is not a folder")
        raise typer.Exit(2)
    serve(Served(root=folder.resolve(), data_dir=str(data_dir), world=world_url,
                 models=str(models) if models else None, tools=tuple(tools or ()),
                 allow_code=allow_code))

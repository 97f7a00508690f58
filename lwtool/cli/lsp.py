"""`lwtool lsp [--stdio]`"""

from __future__ import annotations

from typing import Annotated

import typer


def lsp(
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve on stdio (the default and "
                                        "only transport; editors' clients add it).")] = False,
    client_process_id: Annotated[int | None, typer.Option(
        "--clientProcessId", help="The editor's process id (taken and ignored).")] = None,
) -> None:
    """Run the language server on stdio (diagnostics, hover, completion, definition,
    rename, semantic tokens, document symbols and quick fixes for LWIR, definition and
    pipeline files)."""
    from lwtool.lsp.stdio import main

    main()

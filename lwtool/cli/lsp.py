"""`lwtool lsp`"""

from __future__ import annotations


def lsp() -> None:
    """Run the language server on stdio (diagnostics, hover, completion, definition,
    document symbols for LWIR and definition files)."""
    from lwtool.lsp.stdio import main

    main()

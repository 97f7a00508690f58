"""The `lwtool` console entry. Its first act is to catch Ctrl-C and SIGTERM, before the
CLI's imports (typer and the rest, ~150 ms) run: from then on a signal ends the process
with one line and exit code 130 / 143, never a KeyboardInterrupt traceback from inside
an import (or one that Python swallows in a callback, letting the command go on).
`run` and `replay` switch to graceful handling while a run executes (lwtool.cli.signals)."""

from __future__ import annotations

import signal
import sys

from lwtool.cli.signals import quit_at_once

for _signum in (signal.SIGINT, signal.SIGTERM):
    if signal.getsignal(_signum) is not signal.SIG_IGN:  # nohup, a background job: keep
        signal.signal(_signum, quit_at_once)


def main() -> None:
    if sys.argv[1:] == ["lsp"]:  # an editor starting the server: no CLI imports (~70 ms)
        from lwtool.lsp.stdio import main as lsp_main

        lsp_main()
        return
    from lwtool.cli.app import main as cli_main

    cli_main()

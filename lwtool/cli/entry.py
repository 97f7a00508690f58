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


def lsp_transport_problem(args: list[str]) -> str | None:
    """What is wrong with the options an editor's LSP client gave `lwtool lsp` (None:
    serve). Clients append their transport: `--stdio` (vscode-languageclient's
    TransportKind.stdio) is the one lwtool speaks; `--clientProcessId=N` is taken and
    ignored; a socket, pipe or node-ipc transport is refused in one line."""
    previous = ""
    for arg in args:
        if arg == "--stdio" or arg.startswith("--clientProcessId=") or (
                previous == "--clientProcessId" and arg.isdigit()):
            previous = arg
            continue
        previous = arg
        if arg == "--clientProcessId":
            continue
        if arg.split("=", 1)[0] in ("--socket", "--port", "--pipe", "--node-ipc"):
            return (f"lwtool lsp speaks LSP on stdio only, not {arg.split('=', 1)[0]}: set "
                    "the client's transport to stdio (vscode-languageclient: "
                    "TransportKind.stdio)")
        return f"lwtool lsp takes no option {arg!r} (only --stdio and --clientProcessId)"
    return None


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["lsp"] and "--help" not in args:  # an editor starting the server:
        problem = lsp_transport_problem(args[1:])       # no CLI imports (~70 ms)
        if problem is not None:
            sys.stderr.write(f"lwtool: {problem}\n")
            raise SystemExit(2)
        from lwtool.lsp.stdio import main as lsp_main

        lsp_main()
        return
    if args[:1] == ["validate"]:  # the common case read without typer (~35 ms)
        from lwtool.cli.validate_files import fast_argv, validate_paths

        fast = fast_argv(args[1:])
        if fast is not None:
            raise SystemExit(validate_paths(*fast))
    from lwtool.cli.app import main as cli_main

    cli_main()

"""The `lwtool` command: a thin typer shell. Each command lives in its own module, and
only the module of the command that runs is imported (`COMMANDS`, loaded by
`LazyCommands` when click asks for it), so `lwtool validate` pays neither for the
runtime nor for the other commands' imports. `lwtool --help` loads them all to list
them."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from typing import Annotated, Any

import typer
from typer._click.core import Command, Context  # typer 0.28 vendors click as typer._click
from typer.core import TyperGroup

from lwtool.cli import exit_codes
from lwtool.cli.render import say
from lwtool.cli.signals import Terminated

# command -> (module in lwtool.cli, function), in the order `lwtool --help` lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("validate", "validate"), "canon": ("canon", "canon"),
    "hash": ("canon", "hash_"), "lock": ("lock", "lock"), "check": ("check", "check"),
    "explain": ("explain", "explain"), "plan": ("plan", "plan"),
    "generate": ("generate", "generate"), "run": ("run", "run"),
    "orchestrate": ("orchestrate", "orchestrate"), "worker": ("worker", "worker"),
    "workers": ("operate", "workers"), "queues": ("operate", "queues"),
    "migrate": ("operate", "migrate"),
    "replay": ("resume", "replay"), "retry": ("resume", "retry"),
    "fork": ("resume", "fork"), "respond": ("resume", "respond"),
    "events": ("inspect", "events"), "report": ("inspect", "report"),
    "reveal": ("reveal", "reveal"),
    "runs": ("runs", "runs"), "graph": ("graph", "graph"),
    "export-otel": ("export_otel", "export_otel"), "ui": ("ui", "ui"),
    "lsp": ("lsp", "lsp"), "mcp": ("mcp_serve", "mcp"), "verify": ("verify", "verify"),
    "version": ("versions", "version"),
}
_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False,
                             "rich_markup_mode": None}


def command(name: str) -> Command:
    """The click command `name` (a key of COMMANDS), its module imported now."""
    module, function = COMMANDS[name]
    single = typer.Typer(**_SETTINGS)
    single.command(name)(getattr(importlib.import_module(f"lwtool.cli.{module}"), function))
    return typer.main.get_command(single)


class LazyCommands(TyperGroup):
    """The root group: its commands are COMMANDS, each built when it is asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        return command(cmd_name) if cmd_name in COMMANDS else None


app = typer.Typer(
    name="lwtool",
    help="LWIR toolchain: validate, lock and check workflow files; run them durably.",
    no_args_is_help=True,
    cls=LazyCommands,
    **_SETTINGS,
)


def _version(value: bool) -> None:
    if value:
        from lwtool._version import __version__

        typer.echo(f"lwtool {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """LWIR toolchain: validate, lock and check workflow files; run them durably."""


def main() -> None:
    code = 0
    try:
        app()  # standalone: always ends in SystemExit with the command's code
    except KeyboardInterrupt as exc:
        code = _interrupted(exc)
    except ModuleNotFoundError as exc:
        from lwtool.cli.extras import NEEDED_FOR, extra_of, hint

        extra = extra_of(exc.name)
        if extra is None:
            raise
        say(f"this command {NEEDED_FOR[extra]}, which is not installed (no module "
            f"{exc.name!r}): {hint(extra)}")
        code = exit_codes.USAGE
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        unhandled = _typer_swallowed_interrupt(exc)
        if unhandled is not None:
            code = _interrupted(unhandled)
    _exit(code)


def _interrupted(exc: KeyboardInterrupt) -> int:
    terminated = isinstance(exc, Terminated)
    say("terminated" if terminated else "interrupted")
    return 143 if terminated else 130


def _typer_swallowed_interrupt(exc: SystemExit) -> KeyboardInterrupt | None:
    """Typer turns a KeyboardInterrupt that no command handled into a silent exit 130
    (SIGTERM's included): the interrupt, when that is how this exit came about."""
    converted = exc.__context__
    cause = getattr(converted, "__cause__", None)
    return cause if isinstance(cause, KeyboardInterrupt) else None


def _exit(code: int) -> None:
    """Exit with `code`. A synchronous tool that hangs past its step's timeout leaves a
    worker thread that Python would join at exit, keeping a finished command alive
    forever; the run's outcome is already printed and committed, so end the process."""
    pools = sys.modules.get("lwtool.record.thread_pools")
    if pools is not None:  # the idle thread pools runs kept for the next run
        pools.release_spares()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)

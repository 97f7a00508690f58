"""The `lwtool` command: a thin typer shell. Each command lives in its own module and
imports what it needs when it runs, so `lwtool validate` never pays for the runtime."""

from __future__ import annotations

import os
import sys
import threading
from typing import Annotated

import typer

from lwtool.cli import (
    canon,
    check,
    exit_codes,
    explain,
    export_otel,
    generate,
    graph,
    inspect,
    lock,
    lsp,
    orchestrate,
    plan,
    resume,
    run,
    runs,
    ui,
    validate,
    verify,
    worker,
)
from lwtool.cli.render import say
from lwtool.cli.signals import Terminated

app = typer.Typer(
    name="lwtool",
    help="LWIR toolchain: validate, lock and check workflow files; run them durably.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
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


app.command("validate")(validate.validate)
app.command("canon")(canon.canon)
app.command("hash")(canon.hash_)
app.command("lock")(lock.lock)
app.command("check")(check.check)
app.command("explain")(explain.explain)
app.command("plan")(plan.plan)
app.command("generate")(generate.generate)
app.command("run")(run.run)
app.command("orchestrate")(orchestrate.orchestrate)
app.command("worker")(worker.worker)
app.command("replay")(resume.replay)
app.command("retry")(resume.retry)
app.command("fork")(resume.fork)
app.command("respond")(resume.respond)
app.command("events")(inspect.events)
app.command("report")(inspect.report)
app.command("runs")(runs.runs)
app.command("graph")(graph.graph)
app.command("export-otel")(export_otel.export_otel)
app.command("ui")(ui.ui)
app.command("lsp")(lsp.lsp)
app.command("verify")(verify.verify)


def main() -> None:
    code = 0
    try:
        app()  # standalone: always ends in SystemExit with the command's code
    except KeyboardInterrupt as exc:
        code = _interrupted(exc)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top in RUN_EXTRA_MODULES:
            say(f"this command runs workflows and needs lwtool's "
                f"runtime, which is not installed (no module {exc.name!r}): "
                "pip install 'lwtool[run]'")
        elif top in OBSERVE_EXTRA_MODULES:
            say(f"this command needs lwtool's observability extra, "
                f"which is not installed (no module {exc.name!r}): "
                "pip install 'lwtool[observe]'")
        else:
            raise
        code = exit_codes.USAGE
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        unhandled = _typer_swallowed_interrupt(exc)
        if unhandled is not None:
            code = _interrupted(unhandled)
    _exit(code)


# The modules of the `run` extra (pyproject.toml): validate, check and lsp need none.
RUN_EXTRA_MODULES = frozenset({"orjson", "aiofiles", "litellm", "deno", "rich"})
# The modules of the `observe` extra: export-otel and ui.
OBSERVE_EXTRA_MODULES = frozenset({"opentelemetry", "google", "starlette", "uvicorn"})


def _interrupted(exc: KeyboardInterrupt) -> int:
    terminated = isinstance(exc, Terminated)
    say(f"{'terminated' if terminated else 'interrupted'}")
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
    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)

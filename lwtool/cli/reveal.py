"""`lwtool reveal RUN STEP_PATH`: read back a value a `sensitive: true` step kept out of
the log (its output, or with --input its input), and record that it was read: a
`SensitiveValueRead` event (the step path, what was read, who, from which host) is
appended to the run's log before the value is printed."""

from __future__ import annotations

import asyncio
import getpass
import json
import socket
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import WorldOption
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import fail, open_world, use_world, world_errors


def reveal(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    step_path: Annotated[str, typer.Argument(help="The sensitive step's path (as `lwtool "
                                             "events` shows it).")],
    input: Annotated[bool, typer.Option("--input", help="The step's input instead of its "
                                        "output.")] = False,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
) -> None:
    """Print a sensitive step's value (recorded in the run's log as read)."""
    from lwtool.record.sensitive import READ_EVENT, sealed, unseal
    from lwtool.world.base import NewEvent, RunLocked

    use_world(world_url)
    what = "input" if input else "output"
    with world_errors():
        world = open_world(data_dir, must_exist=True)
        try:
            ref = _sensitive_ref(world.events(run_id), step_path, what)
            data = asyncio.run(world.get_artifact(ref))
            if not sealed(data):
                raise fail(f"run {run_id}: the {what} of {step_path} is not sensitive; "
                           "`lwtool events` shows it")
            try:
                with world.lock_run(run_id):
                    world.append(run_id, [NewEvent(READ_EVENT, {
                        "stepPath": step_path, "what": what, "ref": ref,
                        "reader": _reader()}, step_path)])
            except RunLocked:
                raise fail(f"run {run_id} is executing; reveal its values once it ends "
                           "(the reading is recorded in its log)") from None
        finally:
            world.close()
    typer.echo(json.dumps(unseal(data), ensure_ascii=False, indent=2))


def _sensitive_ref(events: list[Any], step_path: str, what: str) -> str:
    """The ref of the step's last sealed input or output."""
    wanted = "StepAttemptStarted" if what == "input" else "StepCompleted"
    found = None
    for event in events:
        if event.type != wanted or event.step_path != step_path:
            continue
        payload = event.payload
        found = payload.get("inputRef") if what == "input" else \
            (payload.get("envelope") or {}).get("outputRef")
    if found is None:
        raise fail(f"no {what} of step {step_path} in the run's log (see `lwtool events "
                   "RUN`)", exit_codes.USAGE)
    return str(found)


def _reader() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"

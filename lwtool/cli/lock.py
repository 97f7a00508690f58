"""`lwtool lock PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.canon import compiled_or_exit


def lock(paths: Annotated[list[Path], typer.Argument(help="Files to lock.")]) -> None:
    """Write the version lock beside each valid file: `name.lwir.yaml` ->
    `name.lwir.lock.json`, `name.definition.yaml` -> `name.definition.lock.json` (the
    file name up to its last extension, then `.lock.json`)."""
    from dataclasses import replace

    from lwtool.cli.runtime_options import fail
    from lwtool.lock.io import LockNotWritable, LockUnreadable, read_lock, write_lock
    from lwtool.lock.model import lock_for
    from lwtool.lock.paths import lock_path_for

    for path in paths:
        compiled = compiled_or_exit(path)
        assert compiled.kind is not None
        target = lock_path_for(path)
        new = lock_for(path, compiled.kind, compiled.value,
                       compiled.locked() if compiled.kind == "Workflow" else None)
        try:  # a generated file keeps the generator its lock names
            generator = read_lock(target).get("generator") if target.is_file() else None
        except LockUnreadable:
            generator = None
        if isinstance(generator, str):
            new = replace(new, generator=generator)
        try:
            write_lock(target, new)
        except LockNotWritable as exc:
            raise fail(str(exc)) from None
        typer.echo(f"{target}: {compiled.digest()}")

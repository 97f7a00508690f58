"""`lwtool lock PATH...`"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.canon import _compiled


def lock(paths: Annotated[list[Path], typer.Argument(help="Files to lock.")]) -> None:
    """Write the version lock beside each valid file (`name.lock.json`)."""
    from lwtool.cli.runtime_options import fail
    from lwtool.lock.io import LockNotWritable, write_lock
    from lwtool.lock.model import lock_for, lock_path_for

    for path in paths:
        compiled = _compiled(path)
        assert compiled.kind is not None
        target = lock_path_for(path)
        try:
            write_lock(target, lock_for(path, compiled.kind, compiled.value))
        except LockNotWritable as exc:
            raise fail(str(exc)) from None
        typer.echo(f"{target}: {compiled.digest()}")

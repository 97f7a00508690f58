"""`lwtool ui [--data-dir DIR] [--port N]`: the web inspector on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.options import WorldOption
from lwtool.cli.render import say
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import (
    fail,
    has_store,
    open_world,
    postgres_url,
    use_world,
)

HOST = "127.0.0.1"  # never another interface: the runs hold inputs, prompts and outputs


def ui(
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="The port on "
                                      "127.0.0.1 (0: any free one).")] = 8765,
) -> None:
    """Serve a read-only web inspector of the data dir's runs on 127.0.0.1."""
    use_world(world_url)
    if not has_store(data_dir):
        raise fail(f"no lwtool data in {data_dir} (pass --data-dir)")
    import uvicorn

    from lwtool.ui.app import create_app
    from lwtool.world.base import WorldError

    try:
        world = open_world(data_dir, must_exist=True, read_only=True)
    except WorldError as exc:
        raise fail(str(exc)) from None
    import socket  # here: `lwtool validate` loads this module too

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((HOST, port))
    except OSError as exc:
        raise fail(f"cannot listen on {HOST}:{port}: {exc.strerror} (choose another port "
                   "with --port, or --port 0 for any free one)") from None
    listener.listen(128)  # connections wait in the backlog until the server accepts
    url = postgres_url()
    if url is not None:
        from lwtool.world.postgres_url import where

        source = f"PostgreSQL at {where(url)}"
    else:
        source = str(data_dir)
    say(f"inspector at http://{HOST}:{listener.getsockname()[1]}/ for {source} "
        "(read-only; Ctrl-C stops it)")
    server = uvicorn.Server(uvicorn.Config(create_app(world), log_level="warning",
                                           access_log=False, lifespan="off"))
    try:
        server.run(sockets=[listener])
    finally:
        world.close()

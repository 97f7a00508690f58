"""`lwtool worker --world URL`: execute queued runs of a PostgreSQL world."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.options import WorldOption, finite
from lwtool.cli.render import say
from lwtool.cli.run import DataDir, Models, Tools, freeze_what_is_loaded
from lwtool.cli.runtime_options import (
    fail,
    load_models,
    load_tool_registry,
    open_world,
    postgres_url,
    use_world,
)


def worker(
    world_url: WorldOption = None,
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs this "
                                             "worker executes at once.")] = 4,
    lease_seconds: Annotated[float, typer.Option(
        "--lease-seconds", min=1.0, callback=finite,
        help="How long a claim holds without a heartbeat: "
        "a worker that dies leaves its runs to others after this.")] = 30.0,
    drain: Annotated[bool, typer.Option("--drain", help="End once no run is queued or "
                                        "being executed anywhere.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per claimed and "
                                          "ended run on stderr.")] = False,
) -> None:
    """Execute queued runs (`lwtool run --enqueue`) of a PostgreSQL world until SIGTERM
    (the runs in hand finish first) or, with --drain, until the queue is empty."""
    use_world(world_url)
    if postgres_url() is None:
        raise fail("lwtool worker needs a PostgreSQL world (--world postgresql://... or "
                   "LWTOOL_WORLD)")
    registry = load_tool_registry(tools)
    model_map = load_models(models)
    world = open_world(data_dir)

    import asyncio  # here, as the runtime: `lwtool validate` loads this module too

    from lwtool.runtime import event_loop
    from lwtool.runtime.worker import work, worker_name

    name = worker_name()

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await work(world, registry, model_map, concurrency=concurrency,
                          lease=lease_seconds, drain=drain, stop=stop,
                          say=(lambda line: say(f"worker {name}: {line}")) if verbose
                          else None, name=name)

    say(f"worker {name} started ({concurrency} at a time)")
    try:
        freeze_what_is_loaded()
        ended = event_loop.run(main())
    finally:
        world.close()
    say(f"worker {name} stopped after {ended} run(s)")

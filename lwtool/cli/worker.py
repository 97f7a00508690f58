"""`lwtool worker --world URL`: execute queued runs of a PostgreSQL world."""

from __future__ import annotations

import signal
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import SecretsOption, WorldOption, finite, queue_names
from lwtool.cli.run import DataDir, Models, Tools, freeze_what_is_loaded
from lwtool.cli.runtime_options import (
    fail,
    load_models,
    load_tool_registry,
    open_world,
    postgres_url,
    use_secrets,
    use_world,
)


class LogFormat(StrEnum):
    text = "text"
    json = "json"


LogFormatOption = Annotated[LogFormat, typer.Option(
    "--log-format",
    help="text: a timestamped line per event; json: one JSON object a line (ts, level, "
    "worker, event, runId, stepPath, message), every event included.")]


def worker(
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Runs this "
                                             "worker executes at once.")] = 4,
    lease_seconds: Annotated[float, typer.Option(
        "--lease-seconds", min=1.0, callback=finite,
        help="How long a claim holds without a heartbeat: a worker that hangs leaves its "
        "runs to others after this (one that dies, at once).")] = 30.0,
    queue: Annotated[list[str] | None, typer.Option(
        "--queue", callback=queue_names, help="A queue this worker takes runs from "
        "(repeatable; default: `default`).")] = None,
    drain: Annotated[bool, typer.Option("--drain", help="End once no run is queued or "
                                        "being executed anywhere.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="A line per claimed and "
                                          "ended run on stderr.")] = False,
    log_format: LogFormatOption = LogFormat.text,
    metrics_port: Annotated[int | None, typer.Option(
        "--metrics-port", min=0, max=65535, help="Serve Prometheus metrics (/metrics) and "
        "a health check (/healthz) on 127.0.0.1:PORT (0: a free port, printed).")] = None,
    otel_endpoint: Annotated[str | None, typer.Option(
        "--otel-endpoint", help="Export each run this worker ends as OpenTelemetry traces "
        "to this OTLP/HTTP endpoint (as `lwtool export-otel --endpoint`).")] = None,
) -> None:
    """Execute queued runs (`lwtool run --enqueue`) of a PostgreSQL world until SIGTERM
    (the runs in hand finish first) or, with --drain, until the queue is empty."""
    use_world(world_url)
    use_secrets(secrets)
    if postgres_url() is None:
        raise fail("lwtool worker needs a PostgreSQL world (--world postgresql://... or "
                   "LWTOOL_WORLD)")
    import asyncio  # here, as the runtime: `lwtool validate` loads this module too

    from lwtool.mcp import hub
    from lwtool.runtime import event_loop
    from lwtool.runtime.worker import WorkerSetup, work, worker_name
    from lwtool.runtime.worker_log import WorkerLog
    from lwtool.world.base import WorldError

    name = worker_name()
    log = WorkerLog(name, log_format.value, verbose)
    hub.warn[0] = lambda text: log("mcp_warning", text, level="warning")
    registry = load_tool_registry(tools)
    model_map = load_models(models)
    world = open_world(data_dir)
    setup = WorkerSetup(concurrency=concurrency, lease=lease_seconds, drain=drain,
                        queues=sorted(set(queue or ["default"])), name=name, log=log,
                        otel_endpoint=otel_endpoint)
    if metrics_port is not None:
        setup.metrics = _serve_metrics(world, setup, metrics_port)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        return await work(world, registry, model_map, setup, stop)

    log("worker_started", f"started ({concurrency} at a time, queue"
        f"{'s' if len(setup.queues) > 1 else ''} {', '.join(setup.queues)})", level="notice")
    try:
        freeze_what_is_loaded()
        ended = event_loop.run(main())
    except WorldError as exc:
        raise fail(f"worker {name}: {exc}") from None
    finally:
        world.close()
    log("worker_stopped", f"stopped after {ended} run(s)", level="notice")


def _serve_metrics(world: Any, setup: Any, port: int) -> Any:
    """Start the metrics and health server (exit 2 naming the port when it is taken)."""
    from lwtool.observe.worker_metrics import WorkerMetrics
    from lwtool.world.postgres_queue import RunQueue

    metrics = WorkerMetrics(RunQueue(world).depths, setup.beat_every)
    try:
        server = metrics.serve(port, lambda message: setup.log(
            "metrics_error", message, level="warning"))
    except OSError as exc:
        world.close()
        raise fail(f"cannot serve metrics on 127.0.0.1:{port}: {exc.strerror or exc}"
                   ) from None
    setup.log("metrics_serving", f"metrics on http://127.0.0.1:{server.server_port}/metrics "
              "(health: /healthz)", level="notice")
    return metrics

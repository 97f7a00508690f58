"""`lwtool export-otel RUN_ID [--endpoint URL | --file out.json]`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli.inspect import read_run
from lwtool.cli.options import WorldOption, finite
from lwtool.cli.render import say
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import fail, open_world, use_world


def export_otel(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    endpoint: Annotated[str | None, typer.Option(
        "--endpoint", help="An OTLP/HTTP collector: its base URL (http://host:4318; "
        "/v1/traces is added) or its full traces URL. Default: the OTEL_EXPORTER_OTLP_* "
        "environment, else http://localhost:4318.")] = None,
    file: Annotated[Path | None, typer.Option(
        "--file", help="Write OTLP JSON (an ExportTraceServiceRequest) here instead.")
                    ] = None,
    timeout: Annotated[float, typer.Option(
        "--timeout", min=0.1, callback=finite,
        help="Seconds to wait for the collector.")] = 10.0,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
) -> None:
    """Export a run as OpenTelemetry traces: spans for the run, parallel groups and
    branches, step attempts, and model and tool calls (GenAI semantic conventions)."""
    use_world(world_url)
    if endpoint is not None and file is not None:
        raise fail("give --endpoint or --file, not both")
    from lwtool.observe.otel import send, spans, sub_run_of, write
    from lwtool.observe.otlp_send import ExportFailed

    world = open_world(data_dir, must_exist=True)
    events, version = read_run(world, run_id, with_version=True)

    found = spans(run_id, events, version, lambda child: sub_run_of(world, child))
    try:
        if file is not None:
            try:
                write(found, file)
            except OSError as exc:
                raise fail(f"cannot write {file}: {exc.strerror or exc}") from None
            where = str(file)
        else:
            where = send(found, endpoint, timeout)
    except ExportFailed as exc:
        raise fail(f"run {run_id}: {exc}") from None
    say(f"exported {len(found)} spans of run {run_id} to {where}")

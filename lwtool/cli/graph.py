"""`lwtool graph PATH [--format mermaid|dot] [--run RUN_ID]`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.canon import compiled_or_exit
from lwtool.cli.inspect import run_events
from lwtool.cli.options import GraphFormat, WorldOption
from lwtool.cli.render import error, say
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import open_world, use_world


def graph(
    path: Annotated[Path, typer.Argument(help="An LWIR or Pipeline file.")],
    format: Annotated[GraphFormat, typer.Option("--format", help="mermaid (GitHub and "
                                                "Markdown render it) or dot (Graphviz).")
                      ] = GraphFormat.mermaid,
    run: Annotated[str | None, typer.Option("--run", help="Colour each step by its status "
                                            "in this run, with visit counts.")] = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
) -> None:
    """Print the workflow as a graph: needs and decision edges, loops, parallel groups
    (a pipeline: its workflows, and with --run its sub-runs with their statuses)."""
    use_world(world_url)
    from lwtool import graph as workflow_graph
    from lwtool.validate.context import Context

    compiled = compiled_or_exit(path, "nothing to draw")
    if compiled.kind == "Pipeline":
        sys.stdout.write(_pipeline(path, format, run, data_dir))
        return
    if compiled.kind != "Workflow":
        error(f"{path} is a {compiled.kind}; `lwtool graph` draws an LWIR workflow or a "
              "pipeline")
        raise typer.Exit(exit_codes.USAGE)
    assert compiled.document is not None
    built = workflow_graph.build(Context(compiled.document, "Workflow"))
    if run is not None:
        events = run_events(data_dir, run)
        ran = next((e.payload.get("workflowVersionId") for e in events
                    if e.type == "RunStarted"), None)
        version = compiled.digest()
        if ran != version:
            say(f"warning: run {run} ran {ran}, not {path} "
                f"({version}); statuses are matched by step path")
        built = workflow_graph.with_run(built, events)
    render = workflow_graph.mermaid if format is GraphFormat.mermaid else workflow_graph.dot
    sys.stdout.write(render(built))


def _pipeline(path: Path, format: GraphFormat, run: str | None, data_dir: Path) -> str:
    """A pipeline's graph; with `run`, that pipeline run's sub-runs under their
    workflows."""
    from lwtool.orchestrate import pipeline_graph
    from lwtool.orchestrate.pipeline import load_pipeline
    from lwtool.orchestrate.subruns import sub_run_states
    from lwtool.runtime.api import WorkflowInvalid

    try:
        pipeline = load_pipeline(path)
    except WorkflowInvalid as exc:
        error(str(exc))
        raise typer.Exit(exit_codes.INVALID) from None
    drawn: list[dict[str, str]] = []
    if run is not None:
        run_events(data_dir, run)  # a run that does not exist: said, exit 2
        drawn = sub_run_states(open_world(data_dir, must_exist=True), run)
    render = pipeline_graph.mermaid if format is GraphFormat.mermaid else pipeline_graph.dot
    return render(pipeline, drawn)

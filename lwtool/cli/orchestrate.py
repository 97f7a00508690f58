"""`lwtool orchestrate PIPELINE --input FILE`: an orchestrator session composes the
pipeline's workflows (plans each once, runs it as sub-runs); the same --run-id
resumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import OfflineOption, SecretsOption, WorldOption
from lwtool.cli.render import FileReport, render_text, say
from lwtool.cli.run import (
    AsJson,
    DataDir,
    MaxCost,
    MaxTokens,
    Models,
    Quiet,
    StepTimeout,
    Tools,
    budget_of,
    execute,
)
from lwtool.cli.runtime_options import (
    fail,
    load_models,
    load_tool_registry,
    offline_models,
    open_world,
    read_json_or_yaml,
    use_secrets,
    use_world,
)
from lwtool.observe.terminal import safe_text


def orchestrate(
    pipeline: Annotated[Path, typer.Argument(help="A Pipeline file (kind: Pipeline).")],
    input: Annotated[str, typer.Option("--input", "-i", help="The pipeline's input: a "
                                       "JSON/YAML file, or -.")],
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Choose the pipeline run's "
                                                "id (an existing one resumes).")] = None,
    step_timeout: StepTimeout = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    offline: OfflineOption = False,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCost = None,
) -> None:
    """Run a pipeline: the orchestrator plans its workflows and runs them as sub-runs
    (--max-tokens/--max-cost-usd: one budget for the session, its planners and sub-runs)."""
    use_world(world_url)
    use_secrets(secrets)
    from lwtool.orchestrate.api import check_pipeline_run_id
    from lwtool.orchestrate.api import orchestrate as run_pipeline
    from lwtool.orchestrate.pipeline import load_pipeline
    from lwtool.record.ids import new_run_id
    from lwtool.runtime.api import WorkflowInvalid

    try:
        check_pipeline_run_id(run_id or "x")
    except ValueError as exc:
        raise fail(str(exc)) from None
    try:
        loaded = load_pipeline(pipeline)
    except OSError as exc:
        raise fail(f"cannot read {pipeline}: {exc.strerror or exc}") from None
    except WorkflowInvalid as exc:
        sys.stderr.write(render_text([FileReport(str(exc.path), exc.findings)]))
        raise fail(f"{pipeline} is not valid; nothing was run", exit_codes.INVALID) from None
    run_input = read_json_or_yaml(input, "input")
    registry = load_tool_registry(tools)
    from lwtool.orchestrate.api import tool_clash
    from lwtool.orchestrate.subruns import TOOL_NAMES

    problem = tool_clash(registry, TOOL_NAMES)
    if problem:
        raise fail(problem)
    from lwtool.orchestrate.api import check_pipeline_tools
    from lwtool.tools import MissingTools

    try:
        check_pipeline_tools(loaded, registry)
    except MissingTools as exc:
        raise fail(str(exc)) from None
    model_map = load_models(models)
    if offline:
        documents = [w.definition for w in loaded.workflows]
        model_map = {**offline_models(documents, {"model": loaded.model}), **model_map}
    world = open_world(data_dir)
    run_id = run_id or new_run_id()

    def announce(started: str) -> None:
        say(f"pipeline run {started} started")

    progress = (lambda _message: None) if quiet else say
    result = execute(lambda: run_pipeline(loaded, run_input, world=world, tools=registry,
                                          models=model_map, run_id=run_id,
                                          step_timeout=step_timeout, on_start=announce,
                                          progress=progress,
                                          budget=budget_of(max_tokens, max_cost_usd)),
                     lambda: run_id, as_json,
                     lambda run: f"resume it with `lwtool orchestrate {pipeline} --input "
                                 f"{input} --run-id {run}`")
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, allow_nan=False))
        return
    typer.echo(safe_text(str(result["output"]), lines=True))  # a model's text
    done = sum(1 for s in result["subRuns"] if s["status"] == "completed")
    say(f"pipeline run {run_id} completed ({done} of "
        f"{len(result['subRuns'])} sub-runs completed)")

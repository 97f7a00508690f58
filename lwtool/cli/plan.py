"""`lwtool plan DEFINITION --input FILE -o OUT.lwir.yaml`: a planner model drafts LWIR
for the definition, the validator repairs or rejects it, and the locked result is
written as YAML with its lock beside it. Progress goes to stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import OfflineOption, WorldOption
from lwtool.cli.render import say
from lwtool.cli.run import (
    AsJson,
    DataDir,
    Models,
    StepTimeout,
    Tools,
    definition_of,
    execute,
    lwir_for,
    tools_called,
)
from lwtool.cli.runtime_options import (
    fail,
    load_models,
    load_tool_registry,
    offline_models,
    open_world,
    read_json_or_yaml,
    use_world,
)


def plan(
    path: Annotated[Path, typer.Argument(help="A WorkflowDefinition file.")],
    input: Annotated[str, typer.Option("--input", "-i", help="Run input: a JSON/YAML file, or -.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the LWIR (YAML, "
                                      "or JSON for a .json name); its lock goes beside it.")],
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="The planner session's run "
                                                "id (an existing one resumes).")] = None,
    step_timeout: StepTimeout = None,
    as_json: AsJson = False,
    offline: OfflineOption = False,
    no_code: Annotated[bool, typer.Option(
        "--no-code", help="Import no Python the definition names (planner.harness): "
        "refuse it instead (what `lwtool mcp` passes unless --allow-code).")] = False,
) -> None:
    """Draft LWIR for a definition with its planner model, repair it, lock it, write it."""
    use_world(world_url)
    from lwtool.planner.api import definition_models, plan_definition
    from lwtool.record.ids import new_run_id
    from lwtool.world.base import check_run_id

    try:
        planner_run = check_run_id(run_id) if run_id else new_run_id()
    except ValueError as exc:
        raise fail(str(exc)) from None
    definition = definition_of(path)
    fixed = (definition.get("planner") or {}).get("plan")
    if fixed:  # nothing to plan: the definition's plan is written as it is
        lwir = lwir_for(path)[0]
        assert lwir is not None
        _write(out, lwir)
        say(f"{path} has a fixed plan (planner.plan: {fixed}): written to {out} as it is; "
            "no planner ran")
        _print({"workflowVersionId": _version(lwir), "path": str(out), "plannerRunId": None,
                "drafts": 0, "addedNeeds": [], "usage": None, "fixedPlan": str(fixed)},
               out, as_json)
        return
    harness = (definition.get("planner") or {}).get("harness")
    if no_code and harness:
        raise fail(f"{path} names planner.harness {harness!r}, Python from the repository; "
                   "--no-code imports none (start `lwtool mcp --allow-code` to allow it)")
    run_input = read_json_or_yaml(input, "input")
    registry = load_tool_registry(tools, tools_called(None, definition))
    model_map = {**definition_models(definition),
                 **(offline_models(definition) if offline else {}), **load_models(models)}
    world = open_world(data_dir)

    async def planned() -> dict[str, Any]:
        result = await plan_definition(world, path.parent, definition, run_input, registry,
                                       model_map, planner_run, step_timeout, progress=say)
        _write(out, result.lwir)
        return {"workflowVersionId": result.version_id, "path": str(out),
                "plannerRunId": result.planner_run_id, "drafts": result.drafts,
                "addedNeeds": result.added_needs, "usage": result.usage}

    summary = execute(planned, lambda: planner_run, as_json,
                      lambda run: f"resume it with `lwtool plan ... --run-id {run}`")
    _print(summary, out, as_json)


def _print(summary: dict[str, Any], out: Path, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        sys.stdout.write(f"{out}: {summary['workflowVersionId']}\n")


def _version(lwir: dict[str, Any]) -> str:
    from lwtool.canonical.digest import workflow_version_id

    return workflow_version_id(lwir)


def _write(out: Path, lwir: dict[str, Any]) -> None:
    """The LWIR (YAML unless the name ends in .json) and its lock, each atomically."""
    from lwtool.lock.io import LockNotWritable, write_lock, write_text_atomically
    from lwtool.lock.model import lock_for
    from lwtool.lock.paths import lock_path_for
    from lwtool.planner.emit import document_text

    try:
        write_text_atomically(out, document_text(lwir, out), "the workflow")
        write_lock(lock_path_for(out), lock_for(out, "Workflow", lwir))
    except LockNotWritable as exc:
        raise fail(str(exc)) from None

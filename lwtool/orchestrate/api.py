"""Running a pipeline: an orchestrator session (a harness session of role
`orchestrator`, its own run) offered the pipeline's three tools (lwtool.orchestrate.
subruns) and the global tools, with the pipeline's memory store, the available
workflows' stores read-only and its scratch. `orchestrate(pipeline, input)` is what
`lwtool orchestrate` runs; `run_orchestration(...)` is the spec's deprecated array
form (LWF_DEP_ORCHESTRATOR). The same run id resumes: committed model turns and tool
calls are replayed, a call without a result is dispatched again under the ids it
reserved, a sub-run in flight resumes from its own log."""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lwtool.calls.offline import OFFLINE_MODEL
from lwtool.harness.contract import OrchestrateTask
from lwtool.orchestrate.pipeline import Pipeline, pipeline_of
from lwtool.source.skill_source import located
from lwtool.tools import ToolRegistry, check_tools
from lwtool.world.base import MAX_RUN_ID, World, check_run_id

DEPRECATION = "LWF_DEP_ORCHESTRATOR"
MAX_TURNS = 50  # the orchestrator session's
# The longest id lwtool derives from a pipeline run's: a planner session's for a call of
# the session's last turn (`<run>.plan.<turn>.<n>`, record.ids.reservation), with room
# for 10,000 calls in that turn.
LONGEST_SUFFIX = f".plan.{MAX_TURNS - 1}.9999"
ORCHESTRATOR_SYSTEM = (
    "You orchestrate a pipeline of workflows. Plan a workflow once with plan_workflow "
    "(for a representative input), then run the planned workflowVersionId with "
    "run_workflow for each input; several run_workflow calls in one turn run in "
    "parallel. start_workflow plans and runs one input at once. When the work is done, "
    "answer with the pipeline's result.")
_warned = False


def orchestrator_prompt(pipeline: Pipeline, run_input: Any) -> str:
    """What the orchestrator is asked: the pipeline, its workflows, the input."""
    listed = json.dumps([w.listed() for w in pipeline.workflows], ensure_ascii=False,
                        indent=1)
    about = f"Pipeline {pipeline.id}" + (f": {pipeline.description}"
                                         if pipeline.description else "")
    return (f"{about}\n\nWorkflows you can plan and run:\n{listed}\n\nInput:\n"
            f"{json.dumps(run_input, ensure_ascii=False, indent=1)}")


def tool_clash(tools: ToolRegistry, own: Sequence[str]) -> str | None:
    """Why `tools` cannot be offered beside the orchestrator's `own` (None: they can)."""
    clash = sorted(set(own) & set(tools.tools))
    if not clash:
        return None
    return (f"the orchestrator's own tools (the workflows') cannot be replaced: rename "
            f"{', '.join(clash)}")


def check_pipeline_run_id(run_id: str) -> str:
    """`run_id` if it can name a pipeline run: a run id (world.base.check_run_id) that
    leaves room for the ids derived from it; ValueError otherwise, before anything runs
    (too long, every sub-run would fail while the pipeline completed)."""
    check_run_id(run_id)
    longest = MAX_RUN_ID - len(LONGEST_SUFFIX)
    if len(run_id) > longest:
        raise ValueError(f"run id {run_id[:16]}… is too long for a pipeline run "
                         f"({len(run_id)} characters): its sub-runs' and planner sessions' "
                         f"ids add up to {len(LONGEST_SUFFIX)} more; use at most {longest}")
    return run_id


def check_pipeline_tools(pipeline: Pipeline, registry: ToolRegistry) -> None:
    """MissingTools when a workflow of the pipeline declares a tool `registry` lacks."""
    for workflow in pipeline.workflows:
        if workflow.nested is not None:
            check_pipeline_tools(workflow.nested, registry)
            continue
        check_tools(workflow.definition.get("tools") or [], registry,
                    f"workflow '{workflow.id}' of the pipeline declares")


async def orchestrate(pipeline: Pipeline, run_input: Any, *, world: World | None = None,
                      tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                      models: Mapping[str, str] | None = None, run_id: str | None = None,
                      step_timeout: float | None = None, planner_model: Any = None,
                      on_start: Callable[[str], None] | None = None,
                      progress: Callable[[str], None] | None = None,
                      typed: bool = False,
                      session_tools: ToolRegistry | None = None,
                      budget: Mapping[str, Any] | None = None, depth: int = 0,
                      depth_limit: int | None = None,
                      links: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run (or, with an existing `run_id`, resume) the pipeline; returns its RunResult:
    {runId, status, output (the orchestrator's answer), turns, toolCalls, usage (the
    whole pipeline's, as `lwtool report` and the budget count it: the orchestrator, its
    planner sessions and sub-runs; tokens, costUsd, pricedCalls, unpricedCalls),
    subRuns}. `models` maps model slots (the orchestrator's `model`, the definitions'
    slots) to litellm models; `planner_model` overrides every planner's model. `typed`:
    each workflow is a tool of its own (create_harness) instead of the three tools, and
    the session is asked the input itself under the pipeline's system prompt only.
    `tools` are what the workflows' steps call; the session's model is offered them too
    unless `session_tools` names what it is offered instead. `budget` ({maxTokens,
    maxCostUsd}) is the pipeline's: the orchestrator session, every planner session and
    every sub-run are held against it together (recorded: a resume keeps it). `depth`,
    `depth_limit` (the least maxDepth of the pipelines above) and `links` ({parentRunId,
    parentCallId}): a nested pipeline's, run as a sub-run of another pipeline
    (lwtool.orchestrate.subruns)."""
    from lwtool.harness.bash import BashOptions
    from lwtool.harness.session import run_session
    from lwtool.harness.session_spec import SessionSpec
    from lwtool.orchestrate.subruns import SubRuns, sub_runs
    from lwtool.record.ids import new_run_id
    from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT
    from lwtool.world.local import local_world

    world = world or local_world()
    run_id = check_pipeline_run_id(run_id or new_run_id())
    registry = ToolRegistry.of(tools)
    check_pipeline_tools(pipeline, registry)  # before anything runs, as for model slots
    model_map = dict(models or {})
    say = progress or (lambda _: None)
    if budget is None:  # a resumed pipeline keeps the budget it started with
        from lwtool.world.base import find_run

        record = find_run(world, run_id)
        budget = record.options.get("budget") if record is not None else None
    limits = dict(budget) if budget else None
    composed = SubRuns(world, pipeline, run_id, registry, model_map, step_timeout,
                       planner_model, say, limits, depth, depth_limit, nest=orchestrate)
    offered = composed.workflow_tools() if typed else composed.registry()
    own = registry if session_tools is None else session_tools
    problem = tool_clash(own, offered.names())
    if problem:
        raise ValueError(problem)
    bash, problem = BashOptions.offered("orchestrator")
    if problem:
        say(f"no bash for the orchestrator: {problem}")
    model = pipeline.model
    if isinstance(model, str):
        from lwtool.calls.models import check_slots

        check_slots([model], model_map)  # before the session starts
        model = model_map.get(model, model)
    if model == OFFLINE_MODEL:  # the offline model orchestrates too: real sub-runs
        from lwtool.orchestrate.offline import offline_orchestrator

        model = offline_orchestrator(pipeline, run_input, typed)
    prompt = (run_input if isinstance(run_input, str) else json.dumps(
        run_input, ensure_ascii=False, indent=1)) if typed else orchestrator_prompt(
        pipeline, run_input)
    custom = _orchestrator_harness(pipeline, run_id)
    spec = SessionSpec(
        "orchestrator", model, prompt,
        "\n\n".join(p for p in ((() if typed else (ORCHESTRATOR_SYSTEM,))
                                 + (pipeline.system,)) if p),
        max_turns=MAX_TURNS, skills=tuple(located(s, pipeline.base) for s in pipeline.skills),
        bash=bash, pipeline=pipeline.key,
        available_workflows=tuple(w.id for w in pipeline.workflows),
        identity={"availableWorkflows": sorted(w.hash for w in pipeline.workflows),
                  "maxConcurrentSubRuns": pipeline.max_concurrent_sub_runs},
        budget=limits, name=pipeline.id, harness=custom, links=dict(links or {}),
        task=OrchestrateTask(_request(pipeline, run_input)) if custom is not None else None)
    result = await run_session(world, spec, ToolRegistry({**own.tools, **offered.tools}),
                               run_id=run_id, on_start=on_start,
                               timeout=step_timeout or DEFAULT_STEP_TIMEOUT)
    from lwtool.record.rollup import rolled_usage

    return {**result.as_json(), "usage": rolled_usage(world, run_id)["total"],
            "pipeline": pipeline.id, "subRuns": sub_runs(world, run_id)}


def _orchestrator_harness(pipeline: Pipeline, run_id: str) -> Any:
    """The pipeline's own orchestrator harness (`orchestrator.harness`, read relative
    to the pipeline file), or None; one that cannot be loaded: runtime_config_error."""
    if not pipeline.harness:
        return None
    from lwtool.harness.workflow import HarnessNotLoadable, load_harness
    from lwtool.record.errors import RunFailedError
    from lwtool.tools import relative_spec

    try:
        return load_harness(relative_spec(pipeline.harness, pipeline.base))
    except HarnessNotLoadable as exc:
        raise RunFailedError(run_id, "-", "runtime_config_error",
                             f"orchestrator.harness: {exc}") from None


def _request(pipeline: Pipeline, run_input: Any) -> dict[str, Any]:
    """What an orchestrator harness is asked: the pipeline, its input, its workflows."""
    return {"pipelineId": pipeline.id, "input": run_input, "system": pipeline.system,
            "maxConcurrentSubRuns": pipeline.max_concurrent_sub_runs,
            "workflows": [{"id": w.id, "description": w.definition.get("description"),
                           "inputSchema": (w.definition.get("input") or {}).get("schema"),
                           "workflowDefinitionHash": w.hash} for w in pipeline.workflows]}


async def run_orchestration(*, workflows: Sequence[Any], input: Any,  # noqa: A002 - spec
                            orchestrator: Mapping[str, Any], world: World | None = None,
                            tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                            models: Mapping[str, str] | None = None, run_id: str | None = None,
                            base: Path | None = None, **options: Any) -> dict[str, Any]:
    """The spec's array form (deprecated, LWF_DEP_ORCHESTRATOR; warned once per
    process): `workflows` are definitions (files, dicts, `define_workflow` objects),
    `orchestrator` is {model, system, skills, maxConcurrentSubRuns}."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"{DEPRECATION}: run_orchestration (the array form) is deprecated; "
                      "compose workflows with lwtool.create_harness(workflows=[...])",
                      DeprecationWarning, stacklevel=2)
    pipeline = pipeline_of(workflows, orchestrator, base=base)
    return await orchestrate(pipeline, input, world=world, tools=tools, models=models,
                             run_id=run_id, **options)

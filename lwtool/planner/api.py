"""Running a WorkflowDefinition from Python: `run_definition(definition, input, ...)`
does what `lwtool run DEFINITION` does. A fixed `planner.plan` runs as written;
otherwise the planner drafts and locks the LWIR (its session is run `<run id>.plan`),
then the locked version runs; with `planner.maxOuterCycles` > 1 and a supervise
callable, the outer loop runs instead. The definition's model slots are the model map
(`models` overrides), its id, memory and worker skills reach the worker steps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lwtool.source.skill_source import located
from lwtool.tools import ToolRegistry, relative_spec
from lwtool.world.base import World

Progress = Callable[[str], None]


def definition_models(definition: Mapping[str, Any] | None) -> dict[str, str]:
    """A definition's model slots as slot id -> litellm model."""
    from lwtool.authoring.snapshot import slot_id

    return {slot_id(m): str(m["model"]) for m in (definition or {}).get("models") or []
            if isinstance(m, dict) and m.get("model")}


def definition_durability(definition: Mapping[str, Any] | None) -> str | None:
    """A definition's `runtime.durability` (strict | process), if it sets one."""
    runtime = (definition or {}).get("runtime") or {}
    value = runtime.get("durability") if isinstance(runtime, Mapping) else None
    return str(value) if value is not None else None


def definition_budget(definition: Mapping[str, Any] | None) -> dict[str, Any]:
    """A definition's `runtime.budget` ({maxTokens, maxCostUsd}; {} when it sets none)."""
    runtime = (definition or {}).get("runtime") or {}
    value = runtime.get("budget") if isinstance(runtime, Mapping) else None
    return {k: v for k, v in value.items() if k in ("maxTokens", "maxCostUsd")} \
        if isinstance(value, Mapping) else {}


def workspace_of(definition: Mapping[str, Any] | None, base: Path) -> dict[str, Any] | None:
    """What a definition gives its worker steps' workspaces: its id (the workflow memory
    store), its memory settings, its worker skills (local ones as absolute paths) and
    its `worker.system` prompt."""
    if definition is None:
        return None
    worker = definition.get("worker") or {}
    skills = [located(s, base) for s in worker.get("skills") or []]
    from lwtool.authoring.snapshot import definition_hash

    return {"workflowId": definition["id"], "memory": definition.get("memory"),
            "skills": skills, "definitionHash": definition_hash(dict(definition), base),
            **({"system": worker["system"]} if worker.get("system") else {})}


async def plan_definition(world: World, base: Path, definition: dict[str, Any],
                          run_input: Any, tools: ToolRegistry, models: Mapping[str, str],
                          planner_run: str, step_timeout: float | None = None,
                          outer_loop: dict[str, Any] | None = None,
                          progress: Progress | None = None, planner_model: Any = None,
                          keep_scratch: bool = False, pipeline_run: str | None = None,
                          links: dict[str, Any] | None = None,
                          budget: dict[str, Any] | None = None,
                          budget_root: str | None = None) -> Any:
    """Plan with `planner_model`, else the definition's planner model looked up in
    `models`; bash for the planner where a sandbox can run (else none, and `progress`
    says why). `keep_scratch` when a run of the plan follows (its workers read it).
    `budget` is held against every reply under `budget_root` (lwtool.record.budget)."""
    from lwtool.harness.bash import BashOptions
    from lwtool.planner.compile_loop import plan_workflow
    from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT

    say = progress or (lambda _: None)
    name = str((definition.get("planner") or {}).get("model"))
    bash, problem = BashOptions.offered("planner")
    if problem:
        say(f"no bash for the planner: {problem}")
    model = planner_model if planner_model is not None else models.get(name, name)
    harness_spec = (definition.get("planner") or {}).get("harness")
    if planner_model is None and not harness_spec:  # a planner harness may use no model
        from lwtool.calls.models import check_slots

        check_slots([name], models)  # before the planner session starts
    harness = None
    if harness_spec:  # the definition's own planner harness; unloadable: an error
        from lwtool.planner.custom import load_planner_harness

        harness = load_planner_harness(relative_spec(str(harness_spec), base), planner_run)
    return await plan_workflow(world, definition, run_input, tools, model,
                               run_id=planner_run, skills_base=base, bash=bash,
                               progress=say, outer_loop=outer_loop,
                               timeout=step_timeout or DEFAULT_STEP_TIMEOUT, harness=harness,
                               keep_scratch=keep_scratch, pipeline_run=pipeline_run,
                               links=links, budget=budget, budget_root=budget_root)


async def execute_definition(definition: str | Path | Mapping[str, Any] | Any,
                             run_input: Any, *,
                         world: World | None = None,
                         tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                         models: Mapping[str, str] | None = None, run_id: str | None = None,
                         base: Path | None = None, step_timeout: float | None = None,
                         harness: Any = None,
                         supervise: Callable[[dict[str, Any]], Any] | None = None,
                         on_start: Callable[[str], None] | None = None,
                         progress: Progress | None = None,
                         planner_model: Any = None,
                         durability: str | None = None,
                         budget: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Plan (unless the plan is fixed) and run a definition; an existing `run_id`
    resumes whichever part was interrupted (the RunResult the CLI prints; the Python
    API's `run_definition` adds the run's `events`). `base` is the folder relative
    paths in a definition given as a dict are read from (default: the current folder);
    `planner_model` (a litellm string or a ScriptedModel) overrides `planner.model`.
    `durability` (strict | process) overrides the definition's `runtime.durability`
    for the workflow runs; default: the world's."""
    from lwtool.harness.workflow import load_harness
    from lwtool.record.ids import new_run_id
    from lwtool.runtime.api import checked_lwir, load_lwir
    from lwtool.runtime.interpreter import start_run
    from lwtool.world.local import local_world

    value, folder = checked_definition(definition, base)
    world = world or local_world()
    registry = ToolRegistry.of(tools)
    model_map = {**definition_models(value), **dict(models or {})}
    planner = value.get("planner") or {}
    worker_spec = (value.get("worker") or {}).get("harness")
    if harness is None and worker_spec:
        harness = load_harness(relative_spec(worker_spec, folder))
    workspace = workspace_of(value, folder)
    run_id = run_id or new_run_id()
    durability = durability or definition_durability(value)
    # the run's budget: the definition's runtime.budget, each limit given here winning
    run_budget = {**definition_budget(value), **dict(budget or {})} or None

    async def run(lwir: dict[str, Any], cycle_run: str,
                  links: dict[str, Any] | None = None) -> dict[str, Any]:
        planner_run = (links or {}).get("plannerRunId")
        space = {**workspace, "plannerRunId": planner_run} if workspace and planner_run \
            else workspace  # its workers see that planner session's scratch
        return await start_run(world, lwir, run_input, registry, model_map, cycle_run,
                               on_start, step_timeout, harness, space, durability,
                               links=links, budget=run_budget)

    async def plan(context: dict[str, Any] | None, planner_run: str,
                   root: str | None = None) -> Any:
        return await plan_definition(world, folder, value, run_input, registry, model_map,
                                     planner_run, step_timeout, context, progress,
                                     planner_model, keep_scratch=True, budget=run_budget,
                                     budget_root=root,
                                     links={"parentRunId": root} if root else None)

    if planner.get("plan"):
        return await run(load_lwir(folder / str(planner["plan"])), run_id)
    if int(planner.get("maxOuterCycles", 1)) > 1 and (supervise or planner.get("supervise")):
        from lwtool.planner.outer_loop import model_supervisor, run_outer_loop
        from lwtool.tools import load_attribute

        spec = planner.get("supervise")
        if supervise is not None:
            judge = supervise
        elif isinstance(spec, dict):  # a supervising model: {model: SLOT, system?}
            judge = model_supervisor(model_map.get(spec["model"], spec["model"]),
                                     spec.get("system"))
        else:
            judge = load_attribute(relative_spec(str(spec), folder), "supervise")
        return await run_outer_loop(world, value, run_input, judge, plan, run, run_id,
                                    progress)
    planned = await plan(None, f"{run_id}.plan", run_id)  # one budget for both
    return await run(checked_lwir(planned.lwir), run_id, {"plannerRunId": planned.planner_run_id})


async def run_workflow(workflow: Any, run_input: Any, *, world: World | None = None,
                       tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                       models: Mapping[str, str] | None = None, run_id: str | None = None,
                       on_start: Callable[[str], None] | None = None,
                       step_timeout: float | None = None, harness: Any = None,
                       durability: str | None = None,
                       timeout: float | None = None,
                       secrets: Any = None, skills: Sequence[str | Path] = ()
                       ) -> dict[str, Any]:
    """`lwtool.run_workflow`: an LWIR workflow as lwtool.runtime.api.run_workflow runs it
    (see there for every option, `skills` too: an LWIR run's own), or a
    WorkflowDefinition (a file, a dict with `kind: WorkflowDefinition`, or what
    `define_workflow` returns) planned first, as `run_definition` does; `timeout` bounds
    the whole run either way, and `secrets` gives the values of the secrets it names
    (default: the environment)."""
    from lwtool.capability.secrets import using
    from lwtool.record.ids import new_run_id
    from lwtool.runtime import api

    if not is_definition(workflow):
        return await api.run_workflow(workflow, run_input, world=world, tools=tools,
                                      models=models, run_id=run_id, on_start=on_start,
                                      step_timeout=step_timeout, harness=harness,
                                      durability=durability, timeout=timeout,
                                      secrets=secrets, skills=skills)
    if skills:
        raise ValueError("skills= gives an LWIR run skills of its own; a definition's "
                         "are its worker.skills")
    from lwtool.world.local import local_world

    run_id = run_id or new_run_id()
    world = world or local_world()
    with using(secrets):
        return api.with_events(world, await api.within(timeout, run_id, execute_definition(
            workflow, run_input, world=world, tools=tools, models=models, run_id=run_id,
            step_timeout=step_timeout, harness=harness, on_start=on_start,
            durability=durability)))


async def run_definition(definition: Any, run_input: Any, *, world: World | None = None,
                         run_id: str | None = None, **options: Any) -> dict[str, Any]:
    """`lwtool.run_definition`: plan (unless the plan is fixed) and run a definition, as
    execute_definition does (every option is its), and return the RunResult with the
    run's `events`, as `run_workflow` does."""
    from lwtool.record.ids import new_run_id
    from lwtool.runtime import api
    from lwtool.world.local import local_world

    run_id = run_id or new_run_id()
    world = world or local_world()
    return api.with_events(world, await execute_definition(
        definition, run_input, world=world, run_id=run_id, **options))


def _document_of(value: Any) -> Any:
    """What `define_workflow` returns, as its document; anything else as it is."""
    return value.document() if callable(getattr(value, "document", None)) else value


def is_definition(workflow: Any) -> bool:
    """A WorkflowDefinition: `define_workflow`'s object, a dict or a file of that kind."""
    workflow = _document_of(workflow)
    if isinstance(workflow, Mapping):
        return workflow.get("kind") == "WorkflowDefinition"
    if isinstance(workflow, (str, Path)):
        from lwtool.source.loader import LoadFailed, load_path

        try:
            value = load_path(workflow).value
        except (LoadFailed, OSError):
            return False  # lock_workflow says what is wrong with it
        return isinstance(value, dict) and value.get("kind") == "WorkflowDefinition"
    return False


def load_definition(path: str | Path) -> Any:
    """`lwtool.load_definition`: a WorkflowDefinition file, validated, as a Definition
    (what `define_workflow` returns, with the file's folder for its relative paths)
    for `run_workflow`, `run_orchestration` and `create_harness`. Raises
    WorkflowInvalid with the findings."""
    from lwtool.authoring.definitions import Definition

    value, folder = checked_definition(path, None)
    return Definition(value, folder)


def checked_definition(definition: str | Path | Mapping[str, Any] | Any, base: Path | None
                       ) -> tuple[dict[str, Any], Path]:
    """A valid WorkflowDefinition and the folder its relative paths are read from (a
    file's own folder, a Definition's `folder`, else `base`, else the current one)."""
    import json

    from lwtool.runtime.api import WorkflowInvalid
    from lwtool.source.finding import Severity
    from lwtool.source.loader import LoadFailed, load_path, load_text
    from lwtool.validate.run import document_kind, validate_document

    base = getattr(definition, "folder", None) or base
    definition = _document_of(definition)
    if isinstance(definition, (str, Path)):
        try:
            document, folder = load_path(definition), Path(definition).parent
        except LoadFailed as exc:
            raise WorkflowInvalid(str(definition), exc.findings) from None
    else:
        document, folder = load_text(json.dumps(definition), "<definition>.json"), \
            base or Path.cwd()
    findings = validate_document(document)
    if document_kind(document) != "WorkflowDefinition" or any(
            f.severity is Severity.ERROR for f in findings):
        raise WorkflowInvalid(document.path, findings)
    value: dict[str, Any] = document.value
    return value, folder

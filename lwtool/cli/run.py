"""`lwtool run PATH --input FILE|-` and `lwtool replay RUN_ID`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import AbstractContextManager, contextmanager, redirect_stdout
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import (
    ConfineOption,
    Durability,
    OfflineOption,
    QueueOption,
    SecretsOption,
    WorldOption,
    finite,
)
from lwtool.cli.render import FileReport, render_text, say
from lwtool.cli.runtime_options import (
    again_flags,
    fail,
    load_callable,
    load_models,
    load_tool_registry,
    load_worker_harness,
    offline_models,
    open_world,
    read_json_or_yaml,
    use_confinement,
    use_secrets,
    use_world,
    with_code_timeout,
)

DataDir = Annotated[Path, typer.Option("--data-dir", readable=False,  # lwtool says why
                                       help="The local world's folder.")]
Tools = Annotated[list[str] | None, typer.Option(
    "--tools", help="MODULE:ATTR (a ToolRegistry or a dict of name -> callable), or an MCP "
    "servers file (JSON/YAML `mcpServers`: its tools are SERVER.TOOL); repeatable.")]
Models = Annotated[Path | None, typer.Option("--models", help="YAML/JSON: slot id -> litellm "
                                             "model string (or 'offline').")]
AsJson = Annotated[bool, typer.Option("--json", help="Print the RunResult as JSON.")]
MaxTokens = Annotated[int | None, typer.Option(
    "--max-tokens", min=1, help="Budget: no model call starts once the run's calls used "
    "this many tokens (input + output); the run fails with budget_exceeded.")]
MaxCost = Annotated[float | None, typer.Option(
    "--max-cost-usd", min=0.0, callback=finite,
    help="Budget: no model call starts once the run's calls "
    "cost this much (litellm prices; a reply without a price stops further calls).")]


def budget_of(max_tokens: int | None, max_cost: float | None) -> dict[str, Any] | None:
    """The run's budget from the flags (None: none given)."""
    budget = {k: v for k, v in (("maxTokens", max_tokens), ("maxCostUsd", max_cost))
              if v is not None}
    return budget or None
Harness = Annotated[str | None, typer.Option("--harness", help="MODULE:ATTR: the worker "
                                             "harness (a class or instance; default: the "
                                             "workflow harness).")]
StepTimeout = Annotated[float | None, typer.Option(
    "--step-timeout", min=0.001, callback=finite,
    help="Seconds one step attempt may take (default 300; "
    "replay: the run's own).")]
CodeTimeout = Annotated[float | None, typer.Option(
    "--code-timeout", min=0.001, callback=finite,
    help="Seconds a code.run execution may take (default 30; "
    "a step's sandbox.timeoutMs wins).")]
DurabilityOption = Annotated[Durability | None, typer.Option(
    "--durability", envvar="LWTOOL_DURABILITY",
    help="strict: every step result is flushed to the disk (survives power loss); "
    "process: survives any kill of the process, not power loss (faster). Default: the "
    "definition's runtime.durability, else strict. Recorded with the run.")]

Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No live progress on a terminal "
                                     "(none is shown when stderr is not a terminal).")]

MaxSteps = Annotated[int | None, typer.Option(
    "--max-concurrent-steps", min=1, help="Step attempts the world runs at once across a "
    "run (default 32).")]


def run(
    path: Annotated[Path, typer.Argument(help="An LWIR file, or a WorkflowDefinition (its "
                                         "fixed plan, or what its planner drafts).")],
    input: Annotated[str | None, typer.Option(
        "--input", "-i", help="Run input: a JSON/YAML file, or -.")] = None,
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Choose the run id (an "
                                                "existing one resumes).")] = None,
    step_timeout: StepTimeout = None,
    harness: Harness = None,
    code_timeout: CodeTimeout = None,
    durability: DurabilityOption = None,
    max_concurrent_steps: MaxSteps = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    enqueue: Annotated[bool, typer.Option(
        "--enqueue", help="PostgreSQL world: record the run for `lwtool worker` processes "
        "and print its id at once (no tools needed here: the workers bring them; --tools "
        "pins their schemas: only workers whose tools have them take the run).")] = False,
    offline: OfflineOption = False,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCost = None,
    inputs: Annotated[Path | None, typer.Option(
        "--inputs", help="With --enqueue: a JSON Lines file, one run's input a line, queued "
        "together (an input its schema refuses refuses them all, naming the line).")] = None,
    queue: QueueOption = None,
    secrets: SecretsOption = None,
    confine_tools: ConfineOption = False,
    skill: Annotated[list[str] | None, typer.Option(
        "--skill", help="A skill folder (or SKILL.md, or git+ URL) added to the worker "
        "steps' skills for this run (repeatable): in their system prompt and manifests, "
        "not in the WorkflowVersion.")] = None,
) -> None:
    """Run a workflow durably in the local world and print its output."""
    use_world(world_url)
    use_secrets(secrets)
    use_confinement(confine_tools)
    if run_id is not None:
        from lwtool.world.base import check_run_id

        try:
            check_run_id(run_id)
        except ValueError as exc:
            raise fail(str(exc)) from None
    lwir, definition, children = lwir_for(path)
    budget = budget_of(max_tokens, max_cost_usd)
    if skill and (enqueue or lwir is None):
        raise fail("--skill gives a run executed here skills of its own: not with --enqueue "
                   "or a definition whose planner drafts the plan")
    if inputs is not None or enqueue or queue is not None:
        from lwtool.cli.enqueue import enqueue_runs, read_inputs

        if not enqueue:
            raise fail(("--inputs queues one run a line" if inputs is not None else
                        "--queue names the queue of --enqueue") + ": it needs --enqueue")
        if inputs is not None and (input is not None or run_id is not None):
            raise fail("--inputs gives every run its input and id: drop --input and --run-id")
        batch = read_inputs(inputs, lwir) if inputs is not None else \
            [(run_id, read_json_or_yaml(_given(input), "input"))]
        enqueue_runs(path, lwir, definition, batch, data_dir, models, durability,
                     step_timeout, as_json, budget, queue, tools, children)
        return
    run_input = read_json_or_yaml(_given(input), "input")
    registry = load_tool_registry(tools, tools_called(lwir, definition), lwir)
    if harness is None and definition is not None:
        worker = definition.get("worker") or {}
        worker_harness = load_worker_harness(worker.get("harness"), path.parent)
    else:
        worker_harness = load_worker_harness(harness)
    worker_harness = with_code_timeout(worker_harness, code_timeout)
    from lwtool.planner.api import (  # here: it loads the runtime (validate never does)
        definition_budget,
        definition_durability,
        definition_models,
        workspace_of,
    )

    model_map = {**definition_models(definition),
                 **(offline_models(lwir, definition) if offline else {}), **load_models(models)}
    mode = str(durability or definition_durability(definition) or Durability.strict)
    world = open_world(data_dir, durability=mode, max_concurrent_steps=max_concurrent_steps)
    if lwir is not None:
        _warn_if_capped(lwir, world.max_concurrent_steps)

    from lwtool.runtime.interpreter import start_run

    started: list[str] = []
    again = again_flags(tools, models, data_dir, offline, harness)

    def started_as(new_id: str) -> None:
        started.append(new_id)
        announce(new_id)

    from lwtool.observe.progress import watch

    world, shown = watch(world, sys.stderr, not quiet)
    if lwir is None:  # a definition without a fixed plan: its planner drafts the LWIR
        assert definition is not None
        _plan_then_run(world, path, definition, run_input, registry, model_map, run_id,
                       step_timeout, worker_harness, as_json, shown, budget, again)
        return
    workspace = _with_skills(workspace_of(definition, path.parent), skill or [], data_dir)
    budget = {**definition_budget(definition), **(budget or {})} or None
    drive(lambda: start_run(world, lwir, run_input, registry, model_map, run_id,
                             started_as, step_timeout, worker_harness, workspace,
                             budget=budget, children=children),
           as_json, lambda: started[0] if started else run_id, shown, again)


def _with_skills(workspace: dict[str, Any] | None, skills: list[str],
                 data_dir: Path) -> dict[str, Any] | None:
    """The run's workspace with its `--skill`s (refused, naming it, when one is not a
    skill). A run given none imports no skills code."""
    if not skills:
        return workspace
    from lwtool.harness.run_skills import with_run_skills
    from lwtool.harness.skills import SkillError

    try:
        return with_run_skills(workspace, skills, data_dir)
    except SkillError as exc:
        raise fail(f"--skill: {exc}") from None


def tools_called(lwir: dict[str, Any] | None, definition: dict[str, Any] | None
                 ) -> list[str]:
    """The tools a run may call: its LWIR's tool steps and grants, or its definition's
    tools (the only MCP servers it starts are theirs)."""
    if lwir is not None:
        from lwtool.runtime.needs import reachable_tools

        return reachable_tools(lwir)
    return [str(name) for name in (definition or {}).get("tools") or []]


def _given(input: str | None) -> str:
    """--input, which a run needs (a batch gives --inputs instead)."""
    if input is None:
        raise fail("--input FILE (or -) is needed: the run's input")
    return input


def _plan_then_run(world: Any, path: Path, definition: dict[str, Any], run_input: Any,
                   registry: Any, model_map: dict[str, str], run_id: str | None,
                   step_timeout: float | None, worker_harness: Any, as_json: bool,
                   shown: AbstractContextManager[Any],
                   budget: dict[str, Any] | None = None, again: str = "") -> None:
    """Plan (the planner session is run `<run id>.plan`) then run, or the outer loop
    (lwtool.planner.api.execute_definition); the same --run-id resumes either."""
    from lwtool.planner.api import execute_definition
    from lwtool.record.ids import new_run_id

    run_id = run_id or new_run_id()
    planner = definition.get("planner") or {}
    supervise = None
    if int(planner.get("maxOuterCycles", 1)) > 1 and isinstance(planner.get("supervise"),
                                                                   str):
        supervise = load_callable(planner["supervise"], path.parent, "supervise")

    drive(lambda: execute_definition(path, run_input, world=world, tools=registry,
                                     models=model_map, run_id=run_id,
                                     step_timeout=step_timeout, harness=worker_harness,
                                     supervise=supervise, on_start=announce, progress=say,
                                     budget=budget),
           as_json, lambda: run_id, shown, again)


def _warn_if_capped(lwir: dict[str, Any], world_limit: int) -> None:
    """Say so when the world runs fewer steps at once than the LWIR's groups ask for."""
    from lwtool.runtime.interpreter import concurrency_asked

    asked = concurrency_asked(lwir.get("steps") or [])
    if asked > world_limit:
        say(f"warning: the workflow's parallel groups may run {asked} steps at once; this "
            f"run takes at most {world_limit} (raise it with --max-concurrent-steps)")


def announce(run_id: str) -> None:
    say(f"run {run_id} started")


def _compiled(path: Path) -> Any:
    """The file through the front end; invalid files end the command with findings."""
    from lwtool.compile import compile_file

    try:
        compiled = compile_file(path)
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror or exc}") from None
    if not compiled.ok:
        sys.stderr.write(render_text([FileReport(str(path), compiled.findings)]))
        raise fail(f"{path} is not valid; nothing was run", exit_codes.INVALID)
    return compiled


def definition_of(path: Path) -> dict[str, Any]:
    """A valid WorkflowDefinition file's value."""
    compiled = _compiled(path)
    if compiled.kind != "WorkflowDefinition":
        raise fail(f"{path} is LWIR (kind: Workflow), not a WorkflowDefinition: run it "
                   "with `lwtool run`")
    value: dict[str, Any] = compiled.value
    return value


Children = dict[str, dict[str, Any]]  # version id -> locked LWIR (lwtool.validate.invokes)


def lwir_for(path: Path, plan_of: Path | None = None
             ) -> tuple[dict[str, Any] | None, dict[str, Any] | None, Children]:
    """The LWIR to run (its workflow.invoke children locked), the definition it came
    from, and the child versions it reaches: the file itself, a definition's fixed
    `planner.plan` (which must be LWIR: a plan naming a definition, itself included,
    would never end), or None for a definition its planner drafts."""
    compiled = _compiled(path)
    if compiled.kind == "Workflow":
        locked = compiled.locked()
        return locked.lwir, None, locked.children
    if plan_of is not None:
        raise fail(f"planner.plan of {plan_of} must name an LWIR file (kind: Workflow), "
                   f"but {path} is a WorkflowDefinition", exit_codes.INVALID)
    plan = (compiled.value.get("planner") or {}).get("plan")
    if not plan:
        return None, compiled.value, {}
    lwir, _, children = lwir_for(path.parent / plan, plan_of=path)
    return lwir, compiled.value, children


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """stdout is the contract (the output, or with --json one JSON document): whatever
    tools, models or libraries print while the run executes goes to stderr, from Python
    and from the process's file descriptor 1 alike."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def drive(start: Callable[[], Coroutine[Any, Any, dict[str, Any]]], as_json: bool,
           current_run: Callable[[], str | None],
           shown: AbstractContextManager[Any], again: str = "") -> None:
    """Execute inside the live progress display `shown`; print the result after it.
    `again`: the flags the resume hint names (runtime_options.again_flags)."""
    with shown:
        result = execute(start, current_run, as_json,
                         lambda run: f"resume it with `lwtool replay {run}{again}`")
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, allow_nan=False))
    else:
        typer.echo(json.dumps(result["output"], indent=2, ensure_ascii=False, allow_nan=False))
        say(f"run {result['runId']} completed")


def say_waiting(run_id: str, requests: list[dict[str, Any]], then: str) -> None:
    """What a run waits for, and the command that answers it (on stderr). A request
    of a pipeline's sub-run names that run (`runId`): answered there, then `then`
    resumes the pipeline."""
    for request in requests:
        path, asker = request.get("stepPath"), request.get("runId") or run_id
        schema = json.dumps(request.get("schema"), ensure_ascii=False, separators=(",", ":"))
        say(f"run {asker} waits for input at {path}: {request.get('prompt')}")
        say(f"answer (JSON or YAML matching {schema}): lwtool respond {asker} {path} --input "
            f"FILE{'' if asker != run_id else ' --resume'}", lead="  ")
    if any(r.get("runId", run_id) != run_id for r in requests):
        say(f"then {then}")


def freeze_what_is_loaded() -> None:
    """Move every object made so far (the modules, the loaded and validated document)
    out of the garbage collector's sight: a run makes objects step after step, and
    each full collection walked all of these again (`lwtool run` of a 200-step chain
    spent a fifth of its time a step on it). They live until the process ends anyway;
    garbage among them (from imports and validation: little) stays, as collecting it
    first would cost a full collection (~5 ms here) on every run."""
    import gc

    gc.freeze()


def execute(start: Callable[[], Coroutine[Any, Any, dict[str, Any]]],
            current_run: Callable[[], str | None], as_json: bool,
            resume_hint: Callable[[str], str]) -> dict[str, Any]:
    """Run `start` with signals handled; failures become the CLI's messages and codes."""
    freeze_what_is_loaded()

    from lwtool.calls.models import UnresolvedModel
    from lwtool.cli.signals import Terminated, cancel_on_sigterm, graceful
    from lwtool.record.errors import NondeterminismError, RunFailedError, RunWaitingError
    from lwtool.runtime import event_loop
    from lwtool.tools import MissingTools
    from lwtool.world.base import RunLocked, RunLockLost, RunNotFound, WorldError

    try:
        with _stdout_to_stderr(), graceful():
            result = event_loop.run(cancel_on_sigterm(start))
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        run_id = current_run()
        terminated = isinstance(exc, Terminated)
        what = "terminated" if terminated else "interrupted"
        resume = resume_hint(run_id) if run_id else "nothing started"
        if as_json:  # the run is not failed: it stopped where it was, resumable
            typer.echo(json.dumps({"runId": run_id, "status": "interrupted",
                                   "causeCode": "cancelled", "resume": resume}))
        say(f"run {run_id or '-'} {what}; {resume}")
        raise typer.Exit(143 if terminated else 130) from None
    except RunWaitingError as waiting:
        if as_json:
            typer.echo(json.dumps(waiting.as_json(), ensure_ascii=False))
        say_waiting(waiting.run_id, waiting.requests, resume_hint(waiting.run_id))
        raise typer.Exit(exit_codes.WAITING) from None
    except RunFailedError as failure:
        if as_json:
            typer.echo(json.dumps(failure.as_json(), ensure_ascii=False))
        where = f" at {failure.failed_step_path}" if failure.failed_step_path else ""
        raise fail(f"run {failure.run_id} failed ({failure.cause_code}{where}): "
                   f"{failure.message}", exit_codes.INVALID) from None
    except (UnresolvedModel, MissingTools) as exc:
        raise fail(str(exc)) from None
    except RunNotFound as exc:
        raise fail(f"{exc} (see `lwtool runs`)") from None
    except RunLocked as exc:
        raise fail(str(exc)) from None
    except (WorldError, NondeterminismError) as exc:
        run_id, message = current_run(), str(exc)
        named = not run_id or message.startswith(f"run {run_id}")
        if run_id and isinstance(exc, RunLockLost):
            message += f"; {resume_hint(run_id)}"
        raise fail(message if named else f"run {run_id}: {message}") from None
    return result

"""`lwtool replay`, `lwtool retry`, `lwtool fork` and `lwtool respond`: the commands
that go on from a recorded run (resume it, reopen it after a failure, start a new run
from part of it, or answer what it waits for)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import (
    ConfineOption,
    OfflineOption,
    QueueOption,
    SecretsOption,
    WorldOption,
)
from lwtool.cli.render import say
from lwtool.cli.run import (
    AsJson,
    CodeTimeout,
    DataDir,
    Harness,
    MaxCost,
    MaxSteps,
    MaxTokens,
    Models,
    Quiet,
    StepTimeout,
    Tools,
    announce,
    budget_of,
    drive,
)
from lwtool.cli.runtime_options import (
    again_flags,
    fail,
    load_models,
    load_tool_registry,
    load_worker_harness,
    offline_models,
    open_world,
    postgres_url,
    read_json_or_yaml,
    use_confinement,
    use_secrets,
    use_world,
    with_code_timeout,
)


def replay(
    run_id: Annotated[str, typer.Argument(help="The run to resume.")],
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    confine_tools: ConfineOption = False,
    step_timeout: StepTimeout = None,
    harness: Harness = None,
    code_timeout: CodeTimeout = None,
    max_concurrent_steps: MaxSteps = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    accept_drift: Annotated[bool, typer.Option(
        "--accept-drift", help="Go on although the run's tools, models or harness changed "
        "since it started (recorded as a CapabilityDriftAccepted event).")] = False,
    offline: OfflineOption = False,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCost = None,
    enqueue: EnqueueOption = False,
    queue: QueueOption = None,
) -> None:
    """Resume a run from its event log (completed steps are never re-executed)."""
    if _handed_to_workers(run_id, data_dir, world_url, enqueue, queue, retry=False):
        return
    use_secrets(secrets)
    use_confinement(confine_tools)
    _resume(run_id, tools, models, data_dir, world_url, step_timeout, harness, code_timeout,
            max_concurrent_steps, as_json, quiet, offline, budget_of(max_tokens, max_cost_usd),
            accept_drift=accept_drift)


def retry(
    run_id: Annotated[str, typer.Argument(help="The failed run to retry.")],
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    confine_tools: ConfineOption = False,
    step_timeout: StepTimeout = None,
    harness: Harness = None,
    code_timeout: CodeTimeout = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    offline: OfflineOption = False,
    max_tokens: MaxTokens = None,
    max_cost_usd: MaxCost = None,
    enqueue: EnqueueOption = False,
    queue: QueueOption = None,
) -> None:
    """Retry a failed run: its failed step(s) get new attempts and what follows runs,
    keeping every committed result (the log records a RunRetried event)."""
    if _handed_to_workers(run_id, data_dir, world_url, enqueue, queue, retry=True):
        return
    use_secrets(secrets)
    use_confinement(confine_tools)
    _resume(run_id, tools, models, data_dir, world_url, step_timeout, harness, code_timeout,
            None, as_json, quiet, offline, budget_of(max_tokens, max_cost_usd), retry=True)


def fork(
    run_id: Annotated[str, typer.Argument(help="The run to fork.")],
    step: Annotated[str, typer.Option("--from", help="The top-level step (its id) to run again "
                                      "(with everything downstream of it).")],
    input: Annotated[str | None, typer.Option("--input", "-i", help="A new run input (a "
                                              "JSON/YAML file, or -); default: the "
                                              "run's own.")] = None,
    new_id: Annotated[str | None, typer.Option("--run-id", help="The fork's run id (an "
                                               "existing one resumes).")] = None,
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    confine_tools: ConfineOption = False,
    step_timeout: StepTimeout = None,
    harness: Harness = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
) -> None:
    """Start a new run of the same version that keeps every result not downstream of
    --from and runs that step and what follows again (the original run is untouched)."""
    use_world(world_url)
    use_secrets(secrets)
    use_confinement(confine_tools)
    from lwtool.record.ids import new_run_id
    from lwtool.runtime.fork import SAME_INPUT, fork_run
    from lwtool.world.base import check_run_id

    try:
        fork_id = check_run_id(new_id) if new_id else new_run_id()
    except ValueError as exc:
        raise fail(str(exc)) from None
    run_input = read_json_or_yaml(input, "input") if input is not None else SAME_INPUT
    world = open_world(data_dir, must_exist=True)
    registry = _run_tools(world, run_id, tools)
    worker_harness = load_worker_harness(harness)
    model_map = load_models(models) if models else None

    from lwtool.observe.progress import watch

    world, shown = watch(world, sys.stderr, not quiet)
    drive(lambda: fork_run(world, run_id, step, registry, model_map, run_input, fork_id,
                            announce, step_timeout, worker_harness),
           as_json, lambda: fork_id, shown, again_flags(tools, models, data_dir, False, harness))


def respond(
    run_id: Annotated[str, typer.Argument(help="The waiting run.")],
    step_path: Annotated[str, typer.Argument(help="The step path of the request (as "
                                             "`lwtool runs` or the run printed it).")],
    input: Annotated[str, typer.Option("--input", "-i", help="The answer: a JSON/YAML "
                                       "file, or - for stdin.")],
    resume: Annotated[bool, typer.Option("--resume", help="Go on with the run once the "
                                         "answer is committed (as `lwtool replay`).")] = False,
    enqueue: Annotated[bool, typer.Option("--enqueue", help="PostgreSQL world: queue the "
                                          "run again for `lwtool worker` processes.")] = False,
    tools: Tools = None,
    models: Models = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    secrets: SecretsOption = None,
    confine_tools: ConfineOption = False,
    step_timeout: StepTimeout = None,
    harness: Harness = None,
    code_timeout: CodeTimeout = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    offline: OfflineOption = False,
) -> None:
    """Answer a run's human.input request: the answer is checked against the step's
    schema and committed (a wrong one is refused, nothing written). A run that is
    executing other steps meanwhile goes on with the answer itself."""
    import json

    from lwtool.cli import exit_codes
    from lwtool.runtime.respond import AnswerInvalid, NotWaiting
    from lwtool.runtime.respond import respond as answer
    from lwtool.world.base import RunLocked, RunNotFound, WorldError

    use_world(world_url)
    use_secrets(secrets)
    use_confinement(confine_tools)
    if resume and enqueue:
        raise fail("--resume and --enqueue exclude each other: go on here, or let a worker")
    if enqueue and postgres_url() is None:
        raise fail("--enqueue needs a PostgreSQL world (--world postgresql://... or "
                   "LWTOOL_WORLD)")
    value = read_json_or_yaml(input, "input")
    world = open_world(data_dir, must_exist=True)
    try:
        done = answer(world, run_id, step_path, value)
        if enqueue and not done["executing"]:
            from lwtool.world.postgres_queue import RunQueue

            done["queued"] = RunQueue(world).requeue(run_id)
    except AnswerInvalid as exc:
        raise fail(f"run {run_id}: {exc}; nothing was written", exit_codes.INVALID) from None
    except RunNotFound as exc:
        raise fail(f"{exc} (see `lwtool runs`)") from None
    except (NotWaiting, RunLocked, WorldError) as exc:
        raise fail(str(exc)) from None
    finally:
        world.close()
    still = f"; still waiting at {', '.join(done['open'])}" if done["open"] else ""
    say(f"answered {step_path} of run {run_id}{still}")
    if done["executing"]:
        if as_json:
            typer.echo(json.dumps(done, ensure_ascii=False))
        say(f"run {run_id} is executing: it goes on with the answer itself")
        return
    if not resume:
        if as_json:
            typer.echo(json.dumps(done, ensure_ascii=False))
        if done.get("queued"):
            say(f"run {run_id} queued again; `lwtool worker` processes go on with it")
        elif enqueue:
            say(f"run {run_id} was not waiting in the queue (it was "
                "not started with --enqueue, or a worker holds it)")
        else:
            say(f"go on with `lwtool replay {run_id}`")
        return
    _resume(run_id, tools, models, data_dir, world_url, step_timeout, harness, code_timeout,
            None, as_json, quiet, offline, None)


EnqueueOption = Annotated[bool, typer.Option(
    "--enqueue", help="PostgreSQL world: queue the run again for `lwtool worker` processes "
    "instead of going on with it here (no tools or models needed here).")]


def _handed_to_workers(run_id: str, data_dir: Path, world_url: str | None, enqueue: bool,
                       queue: str | None, retry: bool) -> bool:
    """--enqueue: the run is queued again for the workers (lwtool.cli.requeue)."""
    if queue is not None and not enqueue:
        raise fail("--queue names the queue of --enqueue: it needs --enqueue")
    if not enqueue:
        return False
    from lwtool.cli.requeue import requeue

    use_world(world_url)
    requeue(run_id, data_dir, retry, queue)
    return True


def _resume(run_id: str, tools: list[str] | None, models: Path | None, data_dir: Path,
            world_url: str | None, step_timeout: float | None, harness: str | None,
            code_timeout: float | None, max_concurrent_steps: int | None, as_json: bool,
            quiet: bool, offline: bool, budget: dict[str, Any] | None,
            accept_drift: bool = False, retry: bool = False) -> None:
    """`replay` and `retry`: resume the run from its log (`retry`: reopening it first)."""
    use_world(world_url)
    world = open_world(data_dir, must_exist=True, max_concurrent_steps=max_concurrent_steps)
    registry = _run_tools(world, run_id, tools)
    worker_harness = with_code_timeout(load_worker_harness(harness), code_timeout)
    model_map = load_models(models) if models else None
    if offline:
        model_map = {**_recorded_offline(world, run_id), **(model_map or {})}

    from lwtool.observe.progress import watch
    from lwtool.runtime.interpreter import resume_run

    world, shown = watch(world, sys.stderr, not quiet, run_id)
    drive(lambda: resume_run(world, run_id, registry, model_map, None, step_timeout,
                              worker_harness, accept_drift, retry=retry, budget=budget),
           as_json, lambda: run_id, shown,
           again_flags(tools, models, data_dir, offline, harness))


def _recorded(world: Any, run_id: str) -> tuple[Any, Any]:
    """The run's record and its version as the world holds it ((None, None): no such
    run); WorldError as the world raises it."""
    from lwtool.world.base import find_run

    record = find_run(world, run_id)
    return record, world.get_version(record.version_id) if record is not None else None


def _run_tools(world: Any, run_id: str, spec: list[str] | None) -> Any:
    """The registry of --tools for a recorded run: only the MCP servers of the tools
    its workflow may call are started (every one for a run that is no workflow's or not
    found), each stdio server with the secrets its steps are granted."""
    from lwtool.world.base import WorldError

    try:
        lwir = _recorded(world, run_id)[1]
    except WorldError:
        lwir = None  # resume_run says what is wrong with the world
    if not isinstance(lwir, dict) or lwir.get("kind") != "Workflow":
        return load_tool_registry(spec, None)
    from lwtool.runtime.needs import reachable_tools

    return load_tool_registry(spec, reachable_tools(lwir), lwir)


def _recorded_offline(world: Any, run_id: str) -> dict[str, str]:
    """--offline on replay: the slots of the run's version and of its recorded map."""
    from lwtool.world.base import WorldError

    try:
        record, lwir = _recorded(world, run_id)
    except WorldError as exc:
        raise fail(str(exc)) from None
    if record is None:
        return {}  # resume_run says the run is not there
    return offline_models(lwir, record.options.get("models") or {})

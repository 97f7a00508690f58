"""`lwtool run FILE --enqueue`: record runs in a PostgreSQL world's queue for `lwtool
worker` processes, one (`--input`) or a batch (`--inputs FILE.jsonl`, one input a
line, queued in one transaction: an input that is not JSON or that the workflow's input
schema refuses refuses the whole batch, naming its line). The version is registered with
its record (lwtool.lock.version_record); with `--tools`, that record pins the tools'
schemas (when the version is new here) and the run is queued for workers whose tools
have the schemas the version was registered with."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.options import Durability
from lwtool.cli.render import say
from lwtool.cli.runtime_options import fail, load_models, open_world, postgres_url


def read_inputs(path: Path, lwir: dict[str, Any] | None) -> list[tuple[str | None, Any]]:
    """The inputs of a JSON Lines file (blank lines skipped), each checked against the
    workflow's input schema; exit 1 naming `file:line` for the first one refused."""
    from lwtool.canonical.plain_json import NotJson, to_json
    from lwtool.steps.outputs import OutputInvalid, check_schema

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    schema = ((lwir or {}).get("input") or {}).get("schema")
    batch: list[tuple[str | None, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            value = to_json(json.loads(line))
            check_schema(value, schema, "the input")
        except (ValueError, NotJson, OutputInvalid) as exc:
            raise fail(f"{path}:{number}: {exc}; nothing was queued",
                       exit_codes.INVALID) from None
        batch.append((None, value))
    if not batch:
        raise fail(f"{path} holds no input (one JSON value a line); nothing was queued")
    return batch


def enqueue_runs(path: Path, lwir: dict[str, Any] | None, definition: dict[str, Any] | None,
                 batch: list[tuple[str | None, Any]], data_dir: Path, models: Path | None,
                 durability: Any, step_timeout: float | None, as_json: bool,
                 budget: dict[str, Any] | None, queue: str | None = None,
                 tools: list[str] | None = None,
                 children: dict[str, dict[str, Any]] | None = None) -> None:
    """Record each (run id or None, input) of `batch` on `queue` (None: the default
    queue), all in one transaction; print the run ids, one a line (`--json`: one object
    a run). `children`: the versions the LWIR's workflow.invoke steps reach, registered
    with it (the worker that claims a run executes its children beside it)."""
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.canonical.plain_json import NotJson, to_json
    from lwtool.lock.version_record import (
        drift_message,
        drifted,
        pin_needs,
        pinned,
        validated_meta,
    )
    from lwtool.planner.api import (  # here: it loads the runtime (validate never does)
        definition_budget,
        definition_durability,
        definition_models,
        workspace_of,
    )
    from lwtool.record.ids import new_run_id
    from lwtool.runtime.needs import run_needs
    from lwtool.world.base import WorldError, find_run
    from lwtool.world.postgres_queue import DEFAULT_QUEUE, RunQueue

    if postgres_url() is None:
        raise fail("--enqueue needs a PostgreSQL world (--world postgresql://... or "
                   "LWTOOL_WORLD): workers on other machines take the run from there")
    if lwir is None:
        raise fail(f"{path} has no fixed plan: plan it first (`lwtool plan`) and enqueue "
                   "the LWIR")
    try:
        runs = [(run_id or new_run_id(), to_json(value)) for run_id, value in batch]
    except NotJson as exc:
        raise fail(f"the run input is not JSON {exc}", exit_codes.INVALID) from None
    mode = str(durability or definition_durability(definition) or Durability.strict)
    mapped = {**definition_models(definition), **load_models(models)}
    options = {"models": mapped,
               "durability": mode, "stepTimeoutS": step_timeout,
               "workspace": workspace_of(definition, path.parent)}
    budget = {**definition_budget(definition), **(budget or {})}
    if budget:
        options["budget"] = budget
    registry = _tools_for(lwir, tools)
    tools_of = None if registry is None else registry.tools
    world = open_world(data_dir, durability=mode)
    version_id = workflow_version_id(lwir)
    try:
        for child_id, child in (children or {}).items():  # what its invokes run
            world.register_version(child_id, child, meta=functools.partial(
                validated_meta, child, tools_of))
        world.register_version(version_id, lwir, meta=functools.partial(
            validated_meta, lwir, tools_of))
        meta = world.version_meta(version_id)
        if registry is not None and (drift := drifted(meta, registry.tools)):
            raise fail(drift_message(version_id, drift, registry.tools) + "; nothing was "
                       "queued (a change of schemas is a new workflow version: change the "
                       "LWIR with them)")
        taken = [run_id for run_id, _ in runs if find_run(world, run_id) is not None]
        if taken:
            raise fail(f"run {taken[0]} exists already (choose a new run id)")
        # only a worker of the queue with the tools (and model slots) the run needs
        # claims it
        RunQueue(world).enqueue_many([(run_id, version_id, value, options)
                                      for run_id, value in runs],
                                     run_needs(lwir, mapped, (children or {}).values())
                                     + pin_needs(pinned(meta)),
                                     queue or DEFAULT_QUEUE)
    except WorldError as exc:
        raise fail(str(exc)) from None
    finally:
        world.close()
    for run_id, _ in runs:
        typer.echo(json.dumps({"runId": run_id, "status": "queued"}) if as_json else run_id)
    what = f"run {runs[0][0]}" if len(runs) == 1 else f"{len(runs)} runs"
    where = f" on queue {queue}" if queue and queue != DEFAULT_QUEUE else ""
    flag = f" --queue {queue}" if where else ""
    say(f"{what} queued{where}; `lwtool worker{flag}` processes execute "
        f"{'it' if len(runs) == 1 else 'them'}")


def _tools_for(lwir: dict[str, Any], tools: list[str] | None) -> Any:
    """The registry of `--tools` (None without), holding every tool the LWIR calls."""
    if not tools:
        return None
    from lwtool.cli.runtime_options import load_tool_registry
    from lwtool.runtime.needs import needed_tools
    from lwtool.tools import MissingTools, check_tools

    registry = load_tool_registry(tools)
    try:
        check_tools(needed_tools(lwir), registry)
    except MissingTools as exc:
        raise fail(f"{exc}; nothing was queued") from None
    return registry

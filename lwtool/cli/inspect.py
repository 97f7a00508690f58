"""`lwtool events`, `lwtool report`, `lwtool runs`: read-only views of the data dir."""

from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import WorldOption
from lwtool.cli.render import safe_text
from lwtool.cli.run import AsJson, DataDir
from lwtool.cli.runtime_options import fail, has_store, open_world, use_world


def _stamp(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def open_run(data_dir: Path, run_id: str, with_version: bool = False
             ) -> tuple[list[Any], dict[str, Any] | None]:
    """A run's events, and with `with_version` the version it ran (None when the world
    does not hold it), read from one opening of the world; a missing run or a damaged
    store ends the command with its message."""
    return read_run(open_world(data_dir, must_exist=True), run_id, with_version)


def read_run(world: Any, run_id: str, with_version: bool = False
             ) -> tuple[list[Any], dict[str, Any] | None]:
    """`open_run` on a world already open."""
    from lwtool.world.base import RunNotFound, WorldError

    try:
        record = world.get_run(run_id)
        events = world.events(run_id)
        return events, world.get_version(record.version_id) if with_version else None
    except RunNotFound as exc:
        raise fail(f"{exc} (see `lwtool runs`)") from None
    except WorldError as exc:
        raise fail(str(exc)) from None


def run_events(data_dir: Path, run_id: str) -> list[Any]:
    return open_run(data_dir, run_id)[0]


def events(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    type: Annotated[str | None, typer.Option("--type", help="Event type glob, e.g. "
                                             "'harness.tool_call.*'.")] = None,
    caller: Annotated[str | None, typer.Option("--caller", help="Tool calls by 'model' "
                                               "or 'code'.")] = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: AsJson = False,
) -> None:
    """Print a run's events in commit order, one a line."""
    use_world(world_url)
    if caller is not None and caller not in ("model", "code"):
        raise fail(f"--caller takes model or code, not '{caller}'")
    selected = []
    call_callers: dict[str, str] = {}
    for event in run_events(data_dir, run_id):
        if event.type == "harness.tool_call.started":
            call_callers[str(event.payload.get("callId"))] = str(event.payload.get("caller"))
        if type and not fnmatch.fnmatchcase(event.type, type):
            continue
        if caller is not None:
            if not event.type.startswith("harness.tool_call."):
                continue
            if call_callers.get(str(event.payload.get("callId"))) != caller:
                continue
        selected.append(event)
    for event in selected:
        if as_json:
            typer.echo(json.dumps(event.as_json(), ensure_ascii=False))
        else:
            payload = json.dumps(event.payload, ensure_ascii=False)
            payload = payload if len(payload) <= 160 else payload[:157] + "..."
            typer.echo(safe_text(f"{event.seq:>5}  {_stamp(event.at)}  {event.type:<32} "
                                 f"{event.step_path or '-':<28} {payload}"))
            for failed in event.payload.get("failedBranches") or []:
                typer.echo(safe_text(f"{'':>7}failed branch {failed.get('itemKey')}: "
                                     f"{failed.get('causeCode')} at "
                                     f"{failed.get('failedStepPath')}: {failed.get('message')}"))


def report(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: AsJson = False,
) -> None:
    """Tokens and costUsd per step, per role (worker steps, planner sessions, an outer
    loop's supervisor) and per run with the runs it stands on (costUsd null = unpriced,
    not free)."""
    use_world(world_url)
    from lwtool.record.report import failed_branches, usage_report
    from lwtool.record.rollup import rolled_usage
    from lwtool.world.base import WorldError

    selected = run_events(data_dir, run_id)
    result = usage_report(selected)
    try:
        rolled = rolled_usage(open_world(data_dir, must_exist=True), run_id)
    except WorldError as exc:
        raise fail(str(exc)) from None
    result["run"] = rolled["total"]  # the planner sessions (and a loop's cycles) included
    failed = failed_branches(selected)
    if as_json:
        typer.echo(json.dumps({"runId": run_id, **result, "byRole": rolled["byRole"],
                               "runs": rolled["runs"], "failedBranches": failed},
                              ensure_ascii=False, indent=2))
        return

    def cost(value: float | None) -> str:
        return "unpriced" if value is None else f"${value:.6f}"

    typer.echo(f"{'step':<40} {'in':>8} {'out':>8} {'calls':>6}  cost")
    for path, usage in result["steps"].items():
        calls = usage["pricedCalls"] + usage["unpricedCalls"]
        typer.echo(safe_text(f"{path:<40} {usage['inputTokens']:>8} "
                             f"{usage['outputTokens']:>8} {calls:>6}  {cost(usage['costUsd'])}"))
    for role, usage in rolled["byRole"].items():
        if set(rolled["byRole"]) == {"worker"}:
            break  # one role: the run's line says it all
        calls = usage["pricedCalls"] + usage["unpricedCalls"]
        typer.echo(f"{'role ' + role:<40} {usage['inputTokens']:>8} {usage['outputTokens']:>8} "
                   f"{calls:>6}  {cost(usage['costUsd'])}")
    for row in rolled["runs"] if len(rolled["runs"]) > 2 else []:  # a pipeline's runs
        usage = row["usage"]
        calls = usage["pricedCalls"] + usage["unpricedCalls"]
        typer.echo(f"{row['role'] + ' ' + row['runId']:<40} {usage['inputTokens']:>8} "
                   f"{usage['outputTokens']:>8} {calls:>6}  {cost(usage['costUsd'])}")
    total = result["run"]
    calls = total["pricedCalls"] + total["unpricedCalls"]
    typer.echo(f"{'run ' + run_id:<40} {total['inputTokens']:>8} {total['outputTokens']:>8} "
               f"{calls:>6}  {cost(total['costUsd'])}")
    for group, branches in failed.items():
        typer.echo(f"failed branches of {group} (all_settled; the others fanned in):")
        for branch in branches:
            typer.echo(safe_text(f"  {branch['itemKey']}: {branch['causeCode']} at "
                                 f"{branch['failedStepPath']}: {branch['message']}"))


def runs(data_dir: DataDir = Path(".little-workflow"), world_url: WorldOption = None,
         as_json: AsJson = False) -> None:
    """List the runs in the data dir with status and timestamps."""
    use_world(world_url)
    if not has_store(data_dir):
        typer.echo("[]" if as_json else "no runs")
        return
    from lwtool.world.base import WorldError

    try:
        world = open_world(data_dir)
        records = world.list_runs()
        queued, branches = _queue(world)
    except WorldError as exc:  # a damaged run row: named, as `events` and `replay` do
        raise fail(f"{exc} (`lwtool verify` checks the whole data dir)") from None
    known = {r.run_id for r in records}
    waiting = sorted((run_id, held) for run_id, held in queued.items() if run_id not in known)
    if as_json:
        typer.echo(json.dumps([*({"runId": r.run_id, "workflowVersionId": r.version_id,
                                  "status": r.status, "createdAt": _stamp(r.created_at),
                                  "updatedAt": _stamp(r.updated_at),
                                  "parentRunId": r.parent_run_id, **_held(queued.get(r.run_id)),
                                  **_branches(branches.get(r.run_id))}
                                 for r in records),
                               *({"runId": run_id, "status": "queued", **_held(held)}
                                 for run_id, held in waiting)]))
        return
    for r, depth in _tree(records):
        held = queued.get(r.run_id)
        by = f"  held by {held[1]} since {_stamp(held[2])}" if held and held[1] \
            and r.status == "running" else ""
        typer.echo(f"{'  ' * depth}{'└ ' if depth else ''}{r.run_id}  {r.status:<9}  "
                   f"{_stamp(r.created_at)}  {_stamp(r.updated_at)}  {r.version_id[:19]}…{by}")
        for prefix, worker, since in branches.get(r.run_id, []):
            typer.echo(f"{'  ' * (depth + 1)}branch {prefix} held by {worker} since "
                       f"{_stamp(since)}")
    for run_id, held in waiting:
        typer.echo((f"{run_id}  {held[0]:<9}" + (f"  held by {held[1]} since "
                                                 f"{_stamp(held[2])}" if held[1] else ""))
                   .rstrip())


def _queue(world: Any) -> tuple[dict[str, tuple[str, str, float]],
                                 dict[str, list[tuple[str, str, float]]]]:
    """A PostgreSQL world's queues: run id -> (state, worker, since), and run id ->
    the branches being executed [(prefix, worker, since)]; nothing elsewhere."""
    if not hasattr(world, "url"):
        return {}, {}
    from lwtool.world.postgres_branches import BranchQueue
    from lwtool.world.postgres_queue import RunQueue

    return RunQueue(world).holders(), BranchQueue(world).holders()


def _branches(held: list[tuple[str, str, float]] | None) -> dict[str, Any]:
    if not held:
        return {}
    return {"branches": [{"branch": prefix, "worker": worker, "claimedAt": _stamp(since)}
                         for prefix, worker, since in held]}


def _held(held: tuple[str, str, float] | None) -> dict[str, Any]:
    if not held or not held[1]:
        return {}
    return {"worker": held[1], "claimedAt": _stamp(held[2])}


def _tree(records: list[Any]) -> list[tuple[Any, int]]:
    """Runs in creation order, each run's sub-runs right under it, indented."""
    known = {r.run_id for r in records}
    children: dict[str | None, list[Any]] = {}
    for r in records:
        parent = r.parent_run_id
        children.setdefault(parent if parent in known else None, []).append(r)
    ordered: list[tuple[Any, int]] = []
    todo = [(r, 0) for r in reversed(children.get(None, []))]
    while todo:
        record, depth = todo.pop()
        ordered.append((record, depth))
        todo += [(c, depth + 1) for c in reversed(children.get(record.run_id, []))]
    placed = {id(r) for r, _ in ordered}  # runs in a circle of links (a damaged store)
    return ordered + [(r, 0) for r in records if id(r) not in placed]

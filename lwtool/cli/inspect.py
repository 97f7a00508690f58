"""`lwtool events`, `lwtool report`, `lwtool runs`: read-only views of the data dir."""

from __future__ import annotations

import fnmatch
import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.options import WorldOption
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import fail, open_world, use_world
from lwtool.observe.terminal import safe_text


def stamp(at: float) -> str:
    """A moment as the run listings print it (UTC, to the second)."""
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


EventsJson = Annotated[bool, typer.Option(
    "--json", help="JSON lines, one event a line: seq, type, runId, stepPath, at, payload.")]
ReportJson = Annotated[bool, typer.Option(
    "--json", help="One JSON document: runId, steps (path -> tokens, calls, costUsd), run, "
    "byRole, runs, failedBranches.")]


def events(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    type: Annotated[str | None, typer.Option("--type", help="Event type glob, e.g. "
                                             "'harness.tool_call.*'.")] = None,
    caller: Annotated[str | None, typer.Option("--caller", help="Tool calls by 'model' "
                                               "or 'code'.")] = None,
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: EventsJson = False,
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
            typer.echo(safe_text(f"{event.seq:>5}  {stamp(event.at)}  {event.type:<32} "
                                 f"{event.step_path or '-':<28} {payload}"))
            for failed in event.payload.get("failedBranches") or []:
                typer.echo(safe_text(f"{'':>7}failed branch {failed.get('itemKey')}: "
                                     f"{failed.get('causeCode')} at "
                                     f"{failed.get('failedStepPath')}: {failed.get('message')}"))


def report(
    run_id: Annotated[str, typer.Argument(help="The run.")],
    data_dir: DataDir = Path(".little-workflow"),
    world_url: WorldOption = None,
    as_json: ReportJson = False,
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

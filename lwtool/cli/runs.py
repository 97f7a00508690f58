"""`lwtool runs`: the runs of a data dir or PostgreSQL world, a row each under a header:
id (a pipeline's sub-runs indented under it), status, workflow name, start, last
commit, version. A run marked running that no live process executes is shown
`interrupted`, with the command that resumes it; a `waiting` run (and an executing
one that asks meanwhile), with what it waits for and the command that answers it; in a
PostgreSQL world, queued runs and the worker holding each running run or branch are
shown too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from lwtool.cli.inspect import stamp
from lwtool.cli.options import WorldOption, queue_names
from lwtool.cli.run import DataDir
from lwtool.cli.runtime_options import (
    DEFAULT_DATA_DIR,
    fail,
    has_store,
    open_world,
    postgres_url,
    use_world,
)
from lwtool.observe.terminal import safe_text
from lwtool.runtime.needs import describe

DEFAULT_QUEUE = "default"  # lwtool.world.postgres_queue's (not imported: validate loads this)

RunsJson = Annotated[bool, typer.Option(
    "--json", help="One JSON array, a run each: runId, status, workflow, workflowVersionId, "
    "createdAt, updatedAt, parentRunId, waitingFor (PostgreSQL: worker, claimedAt, "
    "branches).")]


STATUSES = ("queued", "running", "interrupted", "waiting", "completed", "failed")


def _statuses(param: typer.CallbackParam, value: list[str] | None) -> list[str] | None:
    for status in value or []:
        if status not in STATUSES:
            raise fail(f"--status takes one of {', '.join(STATUSES)}, not {status!r}")
    return value


def runs(data_dir: DataDir = DEFAULT_DATA_DIR, world_url: WorldOption = None,
         as_json: RunsJson = False,
         status: Annotated[list[str] | None, typer.Option(
             "--status", callback=_statuses, help="Only runs with this status "
             f"(repeatable): {', '.join(STATUSES)}.")] = None,
         limit: Annotated[int | None, typer.Option(
             "--limit", min=1, help="Only the N most recently started runs (after "
             "--status and --queue).")] = None,
         queue: Annotated[str | None, typer.Option(
             "--queue", callback=queue_names, help="PostgreSQL world: only runs queued on "
             "this queue.")] = None) -> None:
    """List the runs in the data dir (or --world) with status, workflow and timestamps.
    --json prints one array: runId, status, workflow, workflowVersionId, createdAt,
    updatedAt, parentRunId, waitingFor (a waiting or executing run's open requests), and in a
    PostgreSQL world queue, worker, claimedAt, needs (the tools and model slots a worker
    must have to claim it) and branches."""
    use_world(world_url)
    if not has_store(data_dir):
        typer.echo("[]" if as_json else "no runs")
        return
    from lwtool.world.base import WorldError

    try:
        world = open_world(data_dir)
        records = world.list_runs()
        queued, branches = _queue(world)
        on = _queues_of(world, queue is not None)
        if queue is not None:
            records = [r for r in records if on.get(r.run_id) == queue]
            queued = {k: v for k, v in queued.items() if v.queue == queue}
        shown = {r.run_id: _status(world, r) for r in records}
        if status:
            records = [r for r in records if shown[r.run_id] in status]
            queued = queued if "queued" in status else {
                k: v for k, v in queued.items() if k in {r.run_id for r in records}}
        if limit is not None:
            records, queued = _newest(records, queued, limit)
        names = _names(world, records)
        asks = _asks(world, [r.run_id for r in records if r.status == "waiting"
                             or shown[r.run_id] == "running"])
    except WorldError as exc:  # a damaged run row: named, as `events` and `replay` do
        raise fail(f"{exc} (`lwtool verify` checks the whole data dir)") from None
    known = {r.run_id for r in records}
    waiting = sorted((run_id, held) for run_id, held in queued.items() if run_id not in known)
    if as_json:
        typer.echo(json.dumps([*({"runId": r.run_id, "status": shown[r.run_id],
                                  "workflow": names[r.run_id],
                                  "workflowVersionId": r.version_id,
                                  "createdAt": stamp(r.created_at),
                                  "updatedAt": stamp(r.updated_at),
                                  "parentRunId": r.parent_run_id,
                                  **({"queue": on[r.run_id]} if r.run_id in on else {}),
                                  **_held(queued.get(r.run_id)),
                                  **({"waitingFor": asks[r.run_id]}
                                     if asks.get(r.run_id) or r.status == "waiting"
                                     else {}),
                                  **_branches(branches.get(r.run_id))}
                                 for r in records),
                               *({"runId": run_id, "status": "queued", **_held(held)}
                                 for run_id, held in waiting)], ensure_ascii=False))
        return
    if not records and not waiting:
        typer.echo("no runs")
        return
    maps = _map_children(records, shown)  # a map's shards and reduce runs: a line, counted
    tree = _tree([r for r in records if r.run_id not in maps.hidden])
    rows = [(f"{'  ' * depth}{'└ ' if depth else ''}{r.run_id}", r) for r, depth in tree]
    width = max([len("RUN"), *(len(label) for label, _ in rows),
                 *(len(run_id) for run_id, _ in waiting)])
    named = max([len("WORKFLOW"), *(len(n) for n in names.values())])
    typer.echo(f"{'RUN':<{width}}  {'STATUS':<11}  {'WORKFLOW':<{named}}  {'STARTED':<20}  "
               f"{'UPDATED':<20}  VERSION")
    for label, r in rows:
        held = queued.get(r.run_id)
        by = f"  held by {held.worker} since {stamp(held.since)}" if held and held.worker \
            and r.status == "running" else ""
        typer.echo(safe_text(f"{label:<{width}}  {shown[r.run_id]:<11}  "
                             f"{names[r.run_id]:<{named}}  {stamp(r.created_at)}  "
                             f"{stamp(r.updated_at)}  {r.version_id[:19]}…{by}"))
        indent = " " * (len(label) - len(label.lstrip()) + 2)
        for prefix, worker, since in branches.get(r.run_id, []):
            typer.echo(safe_text(f"{indent}branch {prefix} held by {worker} since "
                                 f"{stamp(since)}"))
        for ask in asks.get(r.run_id, []):
            typer.echo(safe_text(f"{indent}waits for input at {ask['stepPath']}: "
                                 f"{ask['prompt']}"))
        for line in maps.lines.get(r.run_id, []):
            typer.echo(safe_text(f"{indent}{line}"))
    for run_id, held in waiting:
        where = f" on queue {held.queue}" if held.queue != DEFAULT_QUEUE else ""
        needs = f"  for a worker{where} with {describe(held.needs)}" if held.needs else \
            (f"  for a worker{where}" if where else "")
        typer.echo(safe_text(f"{run_id:<{width}}  {held.state:<11}" + (
            f"  held by {held.worker} since {stamp(held.since)}" if held.worker
            else needs)).rstrip())
    stopped = [r.run_id for r in records if shown[r.run_id] == "interrupted"]
    if stopped:
        typer.echo("")
    parents = {r.run_id: r.parent_run_id for r in records}
    for run_id in stopped:
        if parents.get(run_id) in stopped:  # a child run: resuming its parent resumes it
            continue
        if run_id in queued:  # a queued run's worker died: another takes it over
            typer.echo(safe_text(f"{run_id} was interrupted (its worker died); a live "
                                 "worker takes it over"))
            continue
        typer.echo(safe_text(f"{run_id} was interrupted (its process died); resume it: "
                             f"{_resume(world, run_id, data_dir)}"))
    waiting_parents = {r.parent_run_id for r in records if r.status == "waiting"}
    for run_id, open_asks in asks.items():
        where = _where(data_dir)
        executing = shown[run_id] == "running"  # it takes answers as it goes on
        if open_asks:
            state, then = ("is executing and waits for a person meanwhile", "") \
                if executing else ("is waiting for a person", " --resume")
            typer.echo(safe_text(f"{run_id} {state}; answer: " + "; ".join(
                f"lwtool respond {run_id} {ask['stepPath']}{where} --input FILE{then}"
                for ask in open_asks)))
        elif executing:
            continue
        elif run_id in waiting_parents:  # a pipeline: answer its sub-runs, then resume it
            typer.echo(safe_text(f"{run_id} waits for its sub-runs: answer them (without "
                                 "--resume), then resume it as it was started (the same "
                                 "--run-id)"))
        else:
            typer.echo(safe_text(f"{run_id} has its answers; go on: "
                                 f"{_resume(world, run_id, data_dir)}"))


def _status(world: Any, record: Any) -> str:
    """The shown status (lwtool.world.base.shown_status): `interrupted` for a run marked
    running that no live process executes (its worker's lock is gone with it), queued
    or not: a live worker takes a queued one over."""
    from lwtool.world.base import shown_status  # here: `lwtool validate` loads this module

    return shown_status(world, record.run_id, str(record.status))


def _names(world: Any, records: list[Any]) -> dict[str, str]:
    """run id -> what it is called (lwtool.record.names: a pipeline's id, a workflow's
    `metadata.name`, ...; `?` when its version cannot be read)."""
    from lwtool.record.names import run_name
    from lwtool.world.base import WorldError

    versions: dict[str, Any] = {}
    for version_id in {r.version_id for r in records}:
        try:
            versions[version_id] = world.get_version(version_id) or {}
        except WorldError:
            versions[version_id] = {}
    return {r.run_id: run_name(versions[r.version_id], (r.options or {}).get("name"))
            for r in records}


def _where(data_dir: Path) -> str:
    """The flag that points a command at this world ("" for the default data dir)."""
    if postgres_url() is not None:
        return " --world URL"
    return "" if data_dir == DEFAULT_DATA_DIR else f" --data-dir {data_dir}"


def _resume(world: Any, run_id: str, data_dir: Path) -> str:
    """The replay command that resumes a run: with `--tools` when its workflow calls
    tools (named, as the run does not record where its tools came from) and `--models`
    when it uses model slots the mapping it recorded does not resolve (a resume reuses
    that mapping)."""
    from lwtool.runtime.needs import SLOT, describe, run_needs
    from lwtool.world.base import WorldError

    try:
        from lwtool.runtime.children import descendants

        record = world.get_run(run_id)
        lwir = world.get_version(record.version_id) or {}
        needs = run_needs(lwir, record.options.get("models") or {},
                          descendants(world, lwir))
    except (WorldError, ValueError):
        needs = []
    flags = (" --tools MODULE:ATTR" if any(not n.startswith(SLOT) for n in needs) else "") \
        + (" --models FILE" if any(n.startswith(SLOT) for n in needs) else "")
    said = f" (giving it {describe(needs)})" if needs else ""
    workers = f", or for the workers: lwtool replay {run_id} --world URL --enqueue" \
        if postgres_url() is not None else ""
    return f"lwtool replay {run_id}{_where(data_dir)}{flags}{said}{workers}"


def _newest(records: list[Any], queued: dict[str, Any], limit: int
            ) -> tuple[list[Any], dict[str, Any]]:
    """The `limit` most recently started runs, then as many runs queued and not yet
    started as there is room for (what the queue holds of runs kept stays)."""
    newest = sorted(records, key=lambda r: (r.created_at, r.run_id))[-limit:]
    kept = {r.run_id for r in newest}
    waiting = [k for k in queued if k not in {r.run_id for r in records}]
    room = set(waiting[:max(limit - len(newest), 0)])
    return ([r for r in records if r.run_id in kept],
            {k: v for k, v in queued.items() if k in kept or k in room})


def _queues_of(world: Any, needed: bool) -> dict[str, str]:
    """run id -> the queue it was queued on, of every run a PostgreSQL world's queue
    holds ({} in a local world; exit 2 there when `needed`: it has no queues)."""
    if not hasattr(world, "url"):
        if not needed:
            return {}
        raise fail("--queue lists the runs of a PostgreSQL world's queue (--world "
                   "postgresql://...): a local world has no queues")
    from lwtool.world.postgres_queue import RunQueue

    return RunQueue(world).queues_of()


def _asks(world: Any, waiting: list[str]) -> dict[str, list[dict[str, Any]]]:
    """run id -> its open human.input requests, for the runs marked waiting and those
    executing (an answer given meanwhile is taken up as the run goes on)."""
    if not waiting:
        return {}
    from lwtool.runtime.respond import waiting_for

    return {run_id: waiting_for(world, run_id) for run_id in waiting}


def _queue(world: Any) -> tuple[dict[str, Any], dict[str, list[tuple[str, str, float]]]]:
    """A PostgreSQL world's queues: run id -> what the queue holds of it
    (lwtool.world.postgres_queue.Held), and run id -> the branches being executed
    [(prefix, worker, since)]; nothing elsewhere."""
    if not hasattr(world, "url"):
        return {}, {}
    from lwtool.world.postgres_branches import BranchQueue
    from lwtool.world.postgres_queue import RunQueue

    return RunQueue(world).holders(), BranchQueue(world).holders()


def _held(held: Any) -> dict[str, Any]:
    if not held:
        return {}
    needs = {"queue": held.queue, **({"needs": held.needs} if held.needs else {})}
    if not held.worker:
        return needs
    return {"worker": held.worker, "claimedAt": stamp(held.since), **needs}


def _branches(held: list[tuple[str, str, float]] | None) -> dict[str, Any]:
    if not held:
        return {}
    return {"branches": [{"branch": prefix, "worker": worker, "claimedAt": stamp(since)}
                         for prefix, worker, since in held]}


class _Maps:
    """A map step's child runs, kept off the listing (`hidden`), said as a line each
    map step under its run (`lines`): `map all: 200 shards (199 completed, 1 failed),
    11 reduce runs (11 completed)`."""

    def __init__(self) -> None:
        self.hidden: set[str] = set()
        self.lines: dict[str, list[str]] = {}


def _map_children(records: list[Any], shown: dict[str, str]) -> _Maps:
    import re
    from collections import Counter

    part = re.compile(r"^(.*)\.(shard|reduce)\[[0-9.]+\]$")
    maps = _Maps()
    found: dict[tuple[str, str], dict[str, Counter[str]]] = {}
    for r in records:
        links = (r.options or {}).get("links") if isinstance(r.options, dict) else None
        at = str((links or {}).get("parentStepPath") or "")
        matched = part.match(at)
        if r.parent_run_id is None or matched is None:
            continue
        kind = "shards" if matched.group(2) == "shard" else "reduce runs"
        counts = found.setdefault((r.parent_run_id, matched.group(1)), {})
        counts.setdefault(kind, Counter())[shown[r.run_id]] += 1
        maps.hidden.add(r.run_id)
    for (parent, step), kinds in found.items():
        said = [f"{sum(c.values())} {kind} "
                f"({', '.join(f'{n} {status}' for status, n in sorted(c.items()))})"
                for kind, c in sorted(kinds.items(), key=lambda kv: kv[0] != "shards")]
        maps.lines.setdefault(parent, []).append(f"map {step}: {', '.join(said)}")
    return maps


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

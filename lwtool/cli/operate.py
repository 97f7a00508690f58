"""An operator's commands for a PostgreSQL world: `lwtool migrate` (bring its schema up
to date, with a role that may create objects), `lwtool workers` (the live workers) and
`lwtool queues` (each queue's depth and limit; set a limit)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from lwtool.cli.inspect import stamp
from lwtool.cli.options import WorldOption, queue_names
from lwtool.cli.render import say
from lwtool.cli.runtime_options import fail, postgres_url, use_world
from lwtool.observe.terminal import safe_text

AsJson = Annotated[bool, typer.Option("--json", help="One JSON value on stdout.")]


def _url(world_url: str | None, command: str) -> str:
    use_world(world_url)
    url = postgres_url()
    if url is None:
        raise fail(f"lwtool {command} works on a PostgreSQL world (--world "
                   "postgresql://... or LWTOOL_WORLD)")
    return url


def migrate(world_url: WorldOption = None,
            check: Annotated[bool, typer.Option(
                "--check", help="Change nothing: exit 1 when the schema is not current.")
                             ] = False) -> None:
    """Bring a PostgreSQL world's schema to this lwtool's version (run it with a role
    that owns the schema `lwtool`, before starting workers of a new version; other
    roles then need no right to create anything)."""
    import psycopg

    from lwtool.world.postgres_schema import SCHEMA_VERSION, migrate, schema_version
    from lwtool.world.postgres_url import reason_of, secrets_of, where

    url = _url(world_url, "migrate")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            found = schema_version(conn)
            if not check and found != SCHEMA_VERSION:
                migrate(conn)
    except psycopg.errors.InsufficientPrivilege as exc:
        raise fail(f"cannot migrate PostgreSQL at {where(url)}: "
                   f"{reason_of(exc, secrets_of(url))}: this role may not create the "
                   "schema; run `lwtool migrate` as the role that owns the database (the "
                   "owner of docs/postgres.md's 'Roles and grants'), then grant the "
                   "application role its rows") from None
    except psycopg.Error as exc:
        raise fail(f"cannot migrate PostgreSQL at {where(url)}: "
                   f"{reason_of(exc, secrets_of(url))}") from None
    except RuntimeError as exc:  # a newer schema
        raise fail(f"PostgreSQL at {where(url)}: {exc}") from None
    if check or found == SCHEMA_VERSION:
        said = "current" if found == SCHEMA_VERSION else (
            "newer than this lwtool" if found > SCHEMA_VERSION else "outdated")
        say(f"{where(url)}: lwtool schema {found or 'none'} ({said}; this lwtool's is "
            f"{SCHEMA_VERSION})")
        if found != SCHEMA_VERSION:
            raise typer.Exit(1)
        return
    say(f"{where(url)}: lwtool schema {found or 'none'} -> {SCHEMA_VERSION}")


def workers(world_url: WorldOption = None, as_json: AsJson = False,
            all_: Annotated[bool, typer.Option(
                "--all", help="Also the workers that died without leaving (within a "
                "day).")] = False) -> None:
    """List the live workers of a PostgreSQL world: name, host, pid, queues, runs and
    branches in hand, start and last heartbeat."""
    from lwtool.world.postgres_workers import list_workers

    world = _open(world_url, "workers")
    try:
        found = list_workers(world, include_gone=all_)
    finally:
        world.close()
    if as_json:
        typer.echo(json.dumps([w.to_json() for w in found], ensure_ascii=False))
        return
    if not found:
        typer.echo("no live workers")
        return
    width = max(len("WORKER"), *(len(w.name) for w in found))
    typer.echo(f"{'WORKER':<{width}}  {'STATE':<5}  {'QUEUES':<16}  RUNS  BRANCHES  "
               f"{'STARTED':<20}  LAST HEARTBEAT")
    for w in found:
        typer.echo(safe_text(
            f"{w.name:<{width}}  {'live' if w.live else 'gone':<5}  "
            f"{','.join(w.queues):<16}  {w.runs:>4}  {w.branches:>8}  "
            f"{stamp(w.started_at)}  {stamp(w.seen_at)}"))


def queues(
    name: Annotated[str | None, typer.Argument(
        help="A queue whose limit to set (with --max-concurrent or --no-limit).",
        callback=queue_names)] = None,
    max_concurrent: Annotated[int | None, typer.Option(
        "--max-concurrent", min=1, help="At most this many runs of the queue executing "
        "at once, across every worker.")] = None,
    no_limit: Annotated[bool, typer.Option("--no-limit", help="Take the queue's limit "
                                           "away.")] = False,
    world_url: WorldOption = None,
    as_json: AsJson = False,
) -> None:
    """List the queues of a PostgreSQL world (runs queued, executing, waiting for a
    person; each one's limit), or set a queue's limit."""
    from lwtool.world.base import WorldError
    from lwtool.world.postgres_queue import RunQueue

    if (max_concurrent is not None or no_limit) and name is None:
        raise fail("name the queue whose limit to set: lwtool queues NAME --max-concurrent N")
    if name is not None and (max_concurrent is None) == (not no_limit):
        raise fail("give --max-concurrent N or --no-limit with a queue's name")
    world = _open(world_url, "queues")
    try:
        queue = RunQueue(world)
        if name is not None:
            queue.set_limit(name, max_concurrent)
            say(f"queue {name}: " + (f"at most {max_concurrent} run(s) at once across every "
                                     "worker" if max_concurrent else "no limit"))
            return
        depths, limits = queue.depths(), queue.limits()
    except WorldError as exc:
        raise fail(str(exc)) from None
    finally:
        world.close()
    rows: list[dict[str, Any]] = [
        {"queue": q, "queued": d.get("queued", 0), "executing": d.get("claimed", 0),
         "waiting": d.get("waiting", 0), "maxConcurrent": limits.get(q)}
        for q, d in sorted(depths.items())]
    if as_json:
        typer.echo(json.dumps(rows, ensure_ascii=False))
        return
    if not rows:
        typer.echo("no queues (nothing was enqueued)")
        return
    width = max(len("QUEUE"), *(len(r["queue"]) for r in rows))
    typer.echo(f"{'QUEUE':<{width}}  QUEUED  EXECUTING  WAITING  LIMIT")
    for r in rows:
        limit = r["maxConcurrent"] if r["maxConcurrent"] is not None else "-"
        typer.echo(f"{r['queue']:<{width}}  {r['queued']:>6}  {r['executing']:>9}  "
                   f"{r['waiting']:>7}  {limit}")


def _open(world_url: str | None, command: str) -> Any:
    from lwtool.cli.runtime_options import DEFAULT_DATA_DIR, open_world

    _url(world_url, command)
    return open_world(DEFAULT_DATA_DIR)

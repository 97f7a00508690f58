"""Loading what `run` and `replay` need from flags: input, tools, models, the world.
Each failure is a usage error (exit 2) with one sentence naming the file or flag."""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from lwtool.cli import exit_codes
from lwtool.cli.extras import hint as extra_hint
from lwtool.cli.render import error

DEFAULT_DATA_DIR = Path(".little-workflow")  # the local world's, unless --data-dir


def fail(message: str, code: int = exit_codes.USAGE) -> typer.Exit:
    error(message)
    return typer.Exit(code)


@contextmanager
def world_errors() -> Iterator[None]:
    """A world's refusal as one line (exit 2); a run it does not have points at
    `lwtool runs`."""
    from lwtool.world.base import RunNotFound, WorldError

    try:
        yield
    except RunNotFound as exc:
        raise fail(f"{exc} (see `lwtool runs`)") from None
    except WorldError as exc:
        raise fail(str(exc)) from None


def read_json_or_yaml(source: str, what: str) -> Any:
    """A JSON or YAML value from a file, or from stdin when `source` is '-'."""
    from lwtool.source.loader import MAX_FILE_BYTES, LoadFailed, load_bytes, load_path

    try:
        if source == "-":
            if sys.stdin is None or sys.stdin.closed:
                raise fail(f"{what} is '-' but there is no standard input")
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise fail(f"{what} on standard input is larger than {MAX_FILE_BYTES:,} bytes")
            document = load_bytes(data, "<stdin>")
        else:
            document = load_path(source)
    except FileNotFoundError:
        raise fail(f"{what} file {source} does not exist") from None
    except OSError as exc:
        raise fail(f"cannot read {what} file {source}: {exc.strerror or exc}") from None
    except LoadFailed as failed:
        first = failed.findings[0]
        raise fail(f"{what} {first.path}:{first.line}:{first.column}: {first.message}") from None
    for finding in document.findings:  # duplicate keys: the value would be a guess
        raise fail(f"{what} {finding.path}:{finding.line}:{finding.column}: {finding.message}")
    from lwtool.canonical.plain_json import NotJson, to_json

    try:
        return to_json(document.value)
    except NotJson as exc:
        raise fail(f"{what} {document.path} is not plain JSON {exc}") from None


MODEL_ENTRY = ("model", "maxConcurrent", "rpm", "tpm", "apiBase", "apiKeyEnv", "options",
               "structuredOutput")


def load_models(path: Path | None) -> dict[str, str]:
    """A models file: slot id -> a model string, or `{model, maxConcurrent, rpm, tpm,
    apiBase, apiKeyEnv, options}` (the limits are installed for the process:
    lwtool.calls.limits; where the model is served: lwtool.calls.providers)."""
    if path is None:
        return {}
    value = read_json_or_yaml(str(path), "models")
    if not isinstance(value, dict):
        raise fail(f"models file {path} must map slot ids to model strings")
    models: dict[str, str] = {}
    limits: dict[str, Any] = {}
    endpoints: dict[str, Any] = {}
    for slot, entry in value.items():
        if isinstance(entry, str):
            models[str(slot)] = entry
            continue
        unknown = sorted(set(entry) - set(MODEL_ENTRY)) if isinstance(entry, dict) else []
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str) or unknown:
            near = difflib.get_close_matches(unknown[0], MODEL_ENTRY, n=1) if unknown else []
            what = f"unknown key '{unknown[0]}'" + (f" (did you mean '{near[0]}'?)"
                                                     if near else "") if unknown else ""
            raise fail(f"models file {path}: slot '{slot}' must be a model string or "
                       f"{{{', '.join(MODEL_ENTRY)}}}" + (f": {what}" if what else ""))
        from lwtool.calls.limits import ModelLimits
        from lwtool.calls.providers import Endpoint

        model = entry["model"]
        try:
            limits[model] = ModelLimits.of(entry)
            endpoint = Endpoint.of(entry)
        except ValueError as exc:
            raise fail(f"models file {path}: slot '{slot}': {exc}") from None
        if endpoint is not None:
            if endpoints.get(model, endpoint) != endpoint:
                raise fail(f"models file {path}: slot '{slot}' serves {model} from another "
                           "apiBase, key or options than an earlier slot: one model string, "
                           "one endpoint (name the model differently, e.g. "
                           "openai/NAME with its own apiBase)")
            endpoints[model] = endpoint
        models[str(slot)] = model
    if limits:
        from lwtool.calls.limits import configure

        configure(limits)
    if endpoints:
        from lwtool.calls.providers import configure as configure_endpoints

        configure_endpoints(endpoints)
    return models


def offline_models(*documents: Any) -> dict[str, str]:
    """--offline: every model slot the documents (LWIR, definitions, a pipeline, a run's
    recorded map) name, mapped to the offline model. Slots are read where LWIR and
    definitions put them: `model` values, `models` lists (ids, or names), and `models`
    maps (keys); a name that is not a slot only adds an unused entry."""
    slots: set[str] = set()
    todo = list(documents)
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            for key, child in value.items():
                if key == "model" and isinstance(child, str):
                    slots.add(child)
                elif key == "models" and isinstance(child, list):
                    slots.update(str(m.get("id") or m.get("model")) if isinstance(m, dict)
                                 else str(m) for m in child)
                elif key == "models" and isinstance(child, dict):
                    slots.update(str(k) for k in child)
                todo.append(child)
        elif isinstance(value, list | tuple):
            todo.extend(value)
    return dict.fromkeys(sorted(slots), "offline")


def load_tool_registry(spec: str | list[str] | None, needed: Any = None,
                       lwir: Any = None) -> Any:
    """`--tools` (repeatable): each MODULE:ATTR, or an MCP servers file (its servers
    started, lwtool.mcp: only those whose tools `needed` names, when the caller knows
    what its run calls), merged into one registry; exit 2 naming what cannot be
    loaded. A server that could not be had is a warning, through the MCP hub's (a run
    that needs it fails naming why). A stdio server gets in its environment the secrets
    `lwir`'s tool.call steps calling its tools are granted. Under `--confine-tools`
    (use_confinement) Python tools and stdio servers run in bubblewrap behind a proxy
    that allows `lwir`'s permissions.network only."""
    from lwtool.tools import ToolRegistry, ToolsNotLoadable, merged

    specs = [spec] if isinstance(spec, str) else spec or []
    patterns = _confinement(lwir)
    try:
        registry = merged([(one, _mcp_tools(one, needed, lwir, patterns)
                            if _servers_file(one) else _module_tools(one, patterns))
                           for one in specs]) if specs else ToolRegistry()
    except ToolsNotLoadable as exc:
        raise fail(str(exc)) from None
    if needed is not None and registry.unavailable:  # a server this run needs: say why
        raise fail("; ".join(registry.unavailable.values()))
    if needed is None and registry.unavailable:  # (a servers file's: its hub is loaded)
        from lwtool.mcp.hub import warn

        for reason in registry.unavailable.values():
            warn[0](f"{reason}; only the runs that call its tools fail")
    return registry


def _servers_file(spec: str) -> bool:
    return spec.lower().endswith((".json", ".yaml", ".yml"))


def use_confinement(on: bool) -> None:
    """--confine-tools: this command's tools run confined (lwtool.sandbox.confined)."""
    global _confine
    if on:
        from lwtool.sandbox.bwrap import bwrap_problem

        problem = bwrap_problem()
        if problem is not None:
            raise fail(f"--confine-tools runs tools in bubblewrap: {problem}")
    _confine = on


_confine = False


def _confinement(lwir: Any) -> Any:
    """The host patterns confined tools may reach (None: tools are not confined)."""
    if not _confine:
        return None
    from lwtool.capability.hosts import BadPattern, parse_all

    listed = ((lwir or {}).get("permissions") or {}).get("network") or []
    try:
        return parse_all(listed)
    except BadPattern as exc:
        raise fail(f"permissions.network: {exc}") from None


def _module_tools(spec: str, patterns: Any) -> Any:
    from lwtool.tools import load_tools

    registry = load_tools(spec)
    if patterns is None:
        return registry
    from lwtool.sandbox.confined_tools import confine_registry

    return confine_registry(registry, spec, patterns)


def _mcp_tools(path: str, needed: Any, lwir: Any = None, patterns: Any = None) -> Any:
    """The tools of an MCP servers file, its servers started (the SDK imported only
    here: a tools file names MCP servers)."""
    from lwtool.mcp.config import McpConfigError
    from lwtool.mcp.tools import granted_values, load_servers

    try:
        return load_servers(path, needed, granted_values(lwir), patterns)
    except ImportError as exc:
        raise fail(f"{path} names MCP servers, and the MCP SDK is not installed "
                   f"({exc.name}): {extra_hint('mcp')}") from None
    except McpConfigError as exc:
        raise fail(str(exc)) from None


def load_worker_harness(spec: str | None, relative_to: Path | None = None) -> Any:
    """`--harness MODULE:ATTR` (or a definition's `worker.harness`, whose file path is
    read relative to the definition) -> a harness instance; None -> the default."""
    from lwtool.harness.workflow import HarnessNotLoadable, load_harness

    try:
        from lwtool.tools import relative_spec

        return load_harness(relative_spec(spec, relative_to) if spec else spec)
    except HarnessNotLoadable as exc:
        raise fail(str(exc)) from None


def with_code_timeout(harness: Any, seconds: float | None) -> Any:
    """`--code-timeout S`: the run's code.run time limit, set on the workflow harness (a
    custom harness has its own)."""
    if seconds is None:
        return harness
    if not hasattr(harness, "code_timeout"):
        raise fail(f"--code-timeout applies to the workflow harness; "
                   f"{type(harness).__name__} runs code.run its own way")
    harness.code_timeout = seconds
    return harness


def load_callable(spec: str, relative_to: Path | None, what: str) -> Any:
    """A definition's `MODULE:FUNCTION` (e.g. `planner.supervise`) -> the callable."""
    from lwtool.tools import ToolsNotLoadable, load_attribute, relative_spec

    try:
        value = load_attribute(relative_spec(spec, relative_to), what)
    except ToolsNotLoadable as exc:
        raise fail(str(exc)) from None
    if not callable(value):
        raise fail(f"{what} '{spec}' is not callable")
    return value


_world_url: str | None = None  # this command's --world (one command per process)


def use_secrets(path: Path | None) -> None:
    """Where this command's runs take their secrets from (--secrets FILE; else the
    environment). A file that cannot be read is a usage error."""
    if path is None:
        return
    from lwtool.capability.secrets import Secrets, set_broker

    try:
        set_broker(Secrets.from_dotenv(path))
    except OSError as exc:
        raise fail(f"--secrets: {exc}") from None


def use_world(url: str | None) -> None:
    """Where this command's runs live (its --world / LWTOOL_WORLD)."""
    global _world_url
    _world_url = url or None


def postgres_url() -> str | None:
    """The PostgreSQL URL this command was pointed at, if it was."""
    url = _world_url
    return url if url and url.startswith(("postgresql://", "postgres://")) else None


def _local_dir(data_dir: Path) -> Path:
    """The local data dir: --world as a path or file:PATH, else --data-dir."""
    url = _world_url
    if url and postgres_url() is None:
        return Path(url.removeprefix("file://").removeprefix("file:"))
    return data_dir


def has_store(data_dir: Path) -> bool:
    """Whether `data_dir` holds an event store; True when that cannot be told (another
    user's folder, a PostgreSQL world): opening it then says exactly why it cannot be
    used."""
    if postgres_url() is not None:
        return True
    try:
        return (_local_dir(data_dir) / "events" / "events.db").exists()
    except OSError:
        return True


def open_world(data_dir: Path, must_exist: bool = False, durability: str = "strict",
               max_concurrent_steps: int | None = None, read_only: bool = False) -> Any:
    """The world this command was pointed at (--world), else the local world at
    `data_dir`; `durability` is the default of what it starts."""
    from lwtool.world.base import WorldError
    from lwtool.world.local import DEFAULT_MAX_CONCURRENT_STEPS, LocalWorld

    url = postgres_url()
    try:
        if url is not None:
            try:
                from lwtool.world.postgres import PostgresWorld
            except ImportError:
                raise fail("the PostgreSQL world needs the postgres extra: "
                           f"{extra_hint('postgres')}") from None
            import logging

            # The pool's own warnings (a connection discarded, a reconnect failing) repeat
            # what lwtool says in one line when it matters.
            logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
            world = PostgresWorld(url, data_dir, max_concurrent_steps
                                  or DEFAULT_MAX_CONCURRENT_STEPS, durability)
            from lwtool.calls.limits import share
            from lwtool.world.postgres_limits import SharedLimiter

            # a models file's limits hold for every process of this world together
            share(lambda model, limits: SharedLimiter(world, model, limits))
            return world
        data_dir = _local_dir(data_dir)
        if must_exist and not has_store(data_dir):
            raise fail(f"no lwtool data in {data_dir} (pass --data-dir)")
        return LocalWorld(data_dir, max_concurrent_steps or DEFAULT_MAX_CONCURRENT_STEPS,
                          durability, read_only=read_only)
    except WorldError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(f"cannot use data dir {data_dir}: {exc.strerror or exc}") from None


def again_flags(tools: str | list[str] | None = None, models: Path | None = None,
                data_dir: Path | None = None, offline: bool = False,
                harness: str | None = None) -> str:
    """The flags a resume of this command's run needs, as this command was given them
    (its tools, models, offline model, harness and local data dir), for a hint that
    works as printed: ` --tools tools.py:tools --data-dir d`."""
    import shlex

    parts: list[str] = []
    for spec in [tools] if isinstance(tools, str) else tools or []:
        parts += ["--tools", spec]
    for flag, value in (("--models", models), ("--harness", harness)):
        if value is not None:
            parts += [flag, str(value)]
    if offline:
        parts.append("--offline")
    url = postgres_url()
    if url is not None and url != os.environ.get("LWTOOL_WORLD"):  # given as --world
        from lwtool.world.postgres_url import without_password

        parts += ["--world", without_password(url)]
    elif url is None and data_dir is not None and data_dir != DEFAULT_DATA_DIR:
        parts += ["--data-dir", str(data_dir)]
    return "".join(f" {shlex.quote(part)}" for part in parts)

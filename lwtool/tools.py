"""Tools a workflow may call: `ToolRegistry`, and loading one from `MODULE:ATTR`."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import importlib
import importlib.util
import inspect
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import orjson


class MissingTools(ValueError):
    """Tools a workflow calls that the run is not given: found before any step runs (a
    usage error: nothing was run or recorded)."""


def check_tools(needed: Iterable[str], registry: ToolRegistry,
                what: str = "the workflow calls") -> None:
    """MissingTools naming each tool of `needed` (the tools a workflow's steps may call,
    a definition's `tools`) that `registry` lacks."""
    missing = sorted({str(name) for name in needed} - set(registry.tools))
    if not missing:
        return
    away = sorted({m.partition(".")[0] for m in missing} & set(registry.unavailable))
    if away:  # an MCP server that could not be had: its own reason
        raise MissingTools(f"{'; '.join(registry.unavailable[s] for s in away)} "
                           f"({what} {', '.join(repr(m) for m in missing)}); nothing was run")
    given = ", ".join(registry.names()) or "none"
    them = 'them' if len(missing) > 1 else 'it'
    fix = f"pass --tools MODULE:ATTR that registers {them}"
    if registry.served:  # a servers file was given: its tools are SERVER.TOOL
        fix = (f"an MCP server's tools are named SERVER.TOOL as its servers file and its "
               f"tools/list name them; or {fix}")
    raise MissingTools(
        f"{what} tool{'s' if len(missing) > 1 else ''} "
        f"{', '.join(repr(m) for m in missing)} that {'are' if len(missing) > 1 else 'is'}"
        f" not provided (tools given: {given}): {fix}; nothing was run")


class Refused(Exception):
    """A tool's refusal of a call it cannot make (an unknown id, an input that does not
    fit): no failure of the tool's own, so its message, which the caller reads, is all
    that is said (no class name, no location)."""


class ToolFailed(Exception):
    """A tool's failure said in its own words (an MCP server's `isError` answer, or its
    error reply): its message is all that is said (no class name, no location)."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may ask of the step that calls it, given as a second argument to a
    tool that takes two (`def file_issue(args, ctx)`): `ctx.secret(name)` is the value
    of a secret the step is granted (its `secrets`), and raises PermissionError for any
    other name."""

    run_id: str
    step_path: str
    granted: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def secret_names(self) -> list[str]:
        return sorted(self.granted)

    def secret(self, name: str) -> str:
        try:
            return self.granted[name]
        except KeyError:
            listed = ", ".join(self.secret_names) or "none"
            raise PermissionError(f"secret {name!r} is not granted to step "
                                  f"{self.step_path} (granted: {listed}); add it to the "
                                  "step's `secrets` and to permissions.secrets") from None


NO_CONTEXT = ToolContext("", "")  # a call from outside a run (tests, `lwtool mcp`)


@dataclass(frozen=True)
class Tool:
    """A Python callable (sync or async) that takes the step input as one argument
    (and a ToolContext as a second, when it takes two).

    A sync tool may block (file or network I/O, a subprocess), so it runs in a worker
    thread, which costs a thread hand-off per call (~40-100 us here). `blocking` says
    how it is called: None (the default) lets lwtool decide: in a thread, and on the
    event loop itself while its last QUICK_CALLS calls each returned within QUICK_S
    and nothing else of its run is in flight (a slower call sends it back to threads
    until it proves itself again); True: always in a thread; False: it promises to
    return at once and is always called on the loop (nothing else in the run moves
    while it runs, and a step timeout cannot interrupt it)."""

    name: str
    fn: Callable[..., Any]
    description: str = ""
    input_schema: Any = None
    output_schema: Any = None
    blocking: bool | None = None
    # Adds what a call reserves before it is logged (an orchestrator's `subRunId`),
    # derived from the call id: a call re-dispatched after a kill reserves the same.
    reserve: Callable[[Any, str], Any] | None = None
    # Where the tool comes from, as a run's manifest records it beside its fingerprint
    # (an MCP tool's server, server version and schema hash); not compared for drift.
    origin: Mapping[str, Any] | None = field(default=None, compare=False)
    # The URL the tool's calls go to when lwtool itself connects (an HTTP MCP server's):
    # checked against permissions.network. None: a Python tool or a stdio server, which
    # lwtool cannot hold to the list (lwtool.calls.tool_calls.endpoint_refusal).
    endpoint: str | None = field(default=None, compare=False)

    is_async: bool = field(init=False, repr=False, compare=False)
    # A sync tool called in a worker thread: what `invoke(alone=True)` waits for.
    waits: bool = field(init=False, repr=False, compare=False)
    pace: Pace = field(init=False, repr=False, compare=False)
    takes_context: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_async", inspect.iscoroutinefunction(self.fn))
        object.__setattr__(self, "takes_context", _takes_two(self.fn))
        object.__setattr__(self, "waits", self.blocking is not False and not self.is_async)
        object.__setattr__(self, "pace", Pace(self.blocking is None and self.waits))

    async def invoke(self, args: Any, threads: Executor, alone: bool = False,
                     context: ToolContext | None = None) -> Any:
        """Call the tool: awaited when async, else in `threads` or on the loop (see the
        class). While it runs, its `os._exit(n)` raises ToolExited instead of ending
        the run. It gets its own copy of `args`: what it changes in place stays its
        own, not the run's (a step output or run input the args came from, the input
        the log records).

        `alone`: nothing else of the run is in flight. A tool proven quick is then
        called on the loop; any other sync tool's thread the loop waits for itself for
        up to WAIT_SLICE seconds (half the hand-off of an awaited thread), and awaits
        it as usual after that: a signal, the step's deadline or a cancellation waits
        one slice at most."""
        args = own_copy(args)
        fn = self.fn
        if self.takes_context:
            context = context or NO_CONTEXT
            fn = functools.partial(fn, ctx=context) if _named_ctx(fn) else \
                functools.partial(_with_context, fn, context)
        with _exit_guard:
            if self.is_async:
                return await fn(args)
            if not self.waits:
                return fn(args)
            pace = self.pace
            if alone and pace.proven():
                result, quick = pace.on_loop(fn, args)
                if not quick:  # let what fell due meanwhile (a deadline, a signal) run
                    await asyncio.sleep(0)  # first: the timers fall due behind this task
                    await asyncio.sleep(0)
                return result
            if not alone:
                return await asyncio.get_running_loop().run_in_executor(
                    threads, pace.timed, fn, args)
            try:
                # submit waits for the new thread to start, and a tool quick to make the
                # process's Ctrl-C may have run by then: that wait is the loop's too
                future = threads.submit(pace.timed, fn, args)
                future.exception(timeout=WAIT_SLICE)  # the tool's own errors: below
            except TimeoutError:
                return await asyncio.wrap_future(future)
            except KeyboardInterrupt as exc:  # Ctrl-C in this thread: never the tool's
                raise Interrupted(*exc.args) from None
            return future.result()


def _takes_two(fn: Callable[..., Any]) -> bool:
    """Whether a tool takes a ToolContext too: a second positional parameter, or one
    named `ctx`."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY,
                                                      p.POSITIONAL_OR_KEYWORD)]
    second = positional[1] if len(positional) >= 2 else None
    return (second is not None and (second.default is second.empty
                                    or second.name in ("ctx", "context"))) \
        or any(p.name == "ctx" and p.kind == p.KEYWORD_ONLY for p in parameters)


def _named_ctx(fn: Callable[..., Any]) -> bool:
    parameters = inspect.signature(fn).parameters
    return "ctx" in parameters and parameters["ctx"].kind == inspect.Parameter.KEYWORD_ONLY


def _with_context(fn: Callable[..., Any], context: ToolContext | None, args: Any) -> Any:
    return fn(args, context)


class Pace:
    """How fast a sync tool's calls return, and whether it is proven quick: its last
    QUICK_CALLS calls each returned within QUICK_S. A slower call ends that until the
    tool proves itself again. Calls run in threads (`timed`) until then, on the loop
    (`on_loop`) after."""

    __slots__ = ("adaptive", "streak")

    def __init__(self, adaptive: bool) -> None:
        self.adaptive = adaptive
        self.streak = 0  # quick calls in a row

    def proven(self) -> bool:
        return self.streak >= QUICK_CALLS and self.adaptive and QUICK_S > 0

    def _took(self, seconds: float) -> bool:
        if seconds > QUICK_S:
            self.streak = 0
            return False
        self.streak += 1
        return True

    def timed(self, fn: Callable[..., Any], args: Any) -> Any:
        """Call `fn` in a worker thread, timing it."""
        started = time.perf_counter()
        try:
            return fn(args)
        finally:
            self._took(time.perf_counter() - started)

    def on_loop(self, fn: Callable[..., Any], args: Any) -> tuple[Any, bool]:
        """Call `fn` on the loop's thread as a worker thread would: in a context of its
        own and with no loop running in the thread (it may run one: `asyncio.run`).
        Returns its result and whether it was quick."""
        loop = asyncio.events._get_running_loop()
        asyncio.events._set_running_loop(None)
        started = time.perf_counter()
        try:
            result = contextvars.Context().run(fn, args)
        except KeyboardInterrupt as exc:  # Ctrl-C lands in the main thread, here now
            if threading.current_thread() is threading.main_thread():
                raise Interrupted(*exc.args) from None
            raise
        finally:
            asyncio.events._set_running_loop(loop)
            quick = self._took(time.perf_counter() - started)
        return result, quick


def _quick_seconds(default_ms: float = 1.0) -> float:
    """QUICK_S from LWTOOL_QUICK_TOOL_MS (milliseconds; 0: no sync tool is ever called
    on the loop unless registered with `blocking=False`)."""
    text = os.environ.get("LWTOOL_QUICK_TOOL_MS", "").strip()
    if not text:
        return default_ms / 1000
    try:
        value = float(text)
        if not 0 <= value < float("inf"):
            raise ValueError
    except ValueError:
        warnings.warn(f"LWTOOL_QUICK_TOOL_MS={text!r} is not a number of milliseconds "
                      f">= 0; using {default_ms:g}", stacklevel=2)
        return default_ms / 1000
    return value / 1000


QUICK_S = _quick_seconds()  # a call this short holds up nothing when nothing else runs
QUICK_CALLS = 3  # quick calls in a row before a tool is called on the loop
WAIT_SLICE = 0.01  # seconds the loop itself waits for a sync tool alone in its run

# JSON values only: anything else (a dataclass, a date, a subclass) goes to `_refuse`,
# so it is deep-copied as it is instead of turned into JSON. (lwtool.canonical.exact_json
# holds the same for the layers above; tools sits beside canonical and imports neither.)
_EXACT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME \
    | orjson.OPT_PASSTHROUGH_SUBCLASS


def _refuse(value: Any) -> Any:
    raise TypeError(type(value).__name__)


def own_copy(value: Any) -> Any:
    """A copy of a tool's input sharing nothing with `value`: through orjson for
    JSON (a microsecond for a small input), `copy.deepcopy` for anything else."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    try:
        return orjson.loads(orjson.dumps(value, default=_refuse, option=_EXACT))
    except TypeError:  # an integer beyond 64 bits, a lone surrogate, not JSON
        return copy.deepcopy(value)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C raised in the loop's thread while it waited for a sync tool's thread:
    the run's interruption, which a step must not take for the tool's failure."""


class ToolExited(SystemExit):
    """A tool called `os._exit(code)`: its step fails; the run goes on (or stays
    resumable) instead of vanishing without a word."""

    def __str__(self) -> str:
        return f"the tool called os._exit({self.code})"


_real_exit = os._exit
_guards = 0
_guards_lock = threading.Lock()


def _guarded_exit(status: int) -> NoReturn:
    if os.getpid() != _owner_pid:  # a forked child's own exit (multiprocessing): real
        _real_exit(status)
    raise ToolExited(status)


_owner_pid = os.getpid()


class _ExitGuard:
    """Route `os._exit` of this process to ToolExited while any tool runs (a class, not
    a generator: entered once per tool call)."""

    def __enter__(self) -> None:
        global _guards, _owner_pid
        with _guards_lock:
            if _guards == 0:
                _owner_pid = os.getpid()
                os._exit = _guarded_exit
            _guards += 1

    def __exit__(self, *exc: object) -> None:
        global _guards
        with _guards_lock:
            _guards -= 1
            if _guards == 0:
                os._exit = _real_exit


_exit_guard = _ExitGuard()


@dataclass
class ToolRegistry:
    """Named tools. Use `register(...)` or the `@registry.tool()` decorator."""

    tools: dict[str, Tool] = field(default_factory=dict)
    # MCP servers that could not be had: server name -> why (their tools are absent)
    unavailable: dict[str, str] = field(default_factory=dict)
    served: bool = False  # some tools come from an MCP servers file

    def register(self, name: str, fn: Callable[..., Any], description: str = "",
                 input_schema: Any = None, output_schema: Any = None,
                 blocking: bool | None = None, origin: Mapping[str, Any] | None = None,
                 endpoint: str | None = None) -> Tool:
        """Add a tool. `blocking` (see Tool): None lets lwtool call a sync `fn` on the
        event loop once it has proven quick; True keeps it in worker threads; False
        calls it on the loop always (it returns at once, no I/O). `origin`: see Tool."""
        if name in self.tools:
            raise ValueError(f"tool '{name}' is already registered")
        tool = Tool(name, fn, description or (inspect.getdoc(fn) or "").split("\n")[0],
                    input_schema, output_schema, blocking, origin=origin, endpoint=endpoint)
        self.tools[name] = tool
        return tool

    def tool(self, name: str | None = None, description: str = "", input_schema: Any = None,
             output_schema: Any = None, blocking: bool | None = None
             ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.register(name or fn.__name__, fn, description, input_schema, output_schema,
                          blocking)
            return fn

        return decorate

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def names(self) -> list[str]:
        return sorted(self.tools)

    @classmethod
    def of(cls, value: ToolRegistry | Mapping[str, Callable[..., Any]] | None) -> ToolRegistry:
        if value is None:
            return cls()
        if isinstance(value, ToolRegistry):
            return value
        registry = cls()
        for name, fn in value.items():
            registry.register(name, fn)
        return registry


def create_tool_registry(tools: Mapping[str, Any] | None = None) -> ToolRegistry:
    """The spec's `createToolRegistry({...})`: name -> a callable, or a mapping
    `{execute, description?, inputSchema?, outputSchema?}` (the spec's tool shape)."""
    registry = ToolRegistry()
    for name, entry in (tools or {}).items():
        if callable(entry):
            registry.register(name, entry)
            continue
        if not isinstance(entry, Mapping) or not callable(entry.get("execute")):
            raise TypeError(f"tool {name!r}: give a callable or {{execute, description, "
                            f"inputSchema, outputSchema}}, not {type(entry).__name__}")
        unknown = set(entry) - {"execute", "description", "inputSchema", "outputSchema"}
        if unknown:
            raise TypeError(f"tool {name!r}: unknown key {sorted(unknown)[0]!r}")
        registry.register(name, entry["execute"], str(entry.get("description") or ""),
                          entry.get("inputSchema"), entry.get("outputSchema"))
    return registry


class ToolsNotLoadable(Exception):
    pass


def relative_spec(spec: str, folder: Path | None) -> str:
    """A definition's `file.py:attr` (or `dir/module:attr`) read relative to `folder`."""
    module, sep, attr = spec.rpartition(":")
    if folder is not None and sep and (module.endswith(".py") or "/" in module) \
            and not Path(module).is_absolute():
        return f"{folder / module}:{attr}"
    return spec


def load_attribute(spec: str, what: str = "tools") -> Any:
    """`MODULE:ATTR` (an importable module, or a path to a .py file) -> that attribute."""
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ToolsNotLoadable(f"--{what} takes MODULE:ATTR, got '{spec}'")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name)
            if not path.exists():
                raise ToolsNotLoadable(f"{what} file {path} does not exist")
            loader_spec = importlib.util.spec_from_file_location(f"_lwtool_{what}_{path.stem}",
                                                                 path)
            assert loader_spec is not None and loader_spec.loader is not None
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[loader_spec.name] = module
            loader_spec.loader.exec_module(module)
        else:
            if "" not in sys.path:
                sys.path.insert(0, "")
            module = importlib.import_module(module_name)
    except ToolsNotLoadable:
        raise
    except SystemExit as exc:  # the module exits on import: say so, never exit with it
        raise ToolsNotLoadable(f"cannot import {what} module '{module_name}': it called "
                               f"sys.exit({exc.code!r}) while being imported") from None
    except Exception as exc:  # noqa: BLE001 - any import failure is the user's module's
        raise ToolsNotLoadable(f"cannot import {what} module '{module_name}': "
                               f"{type(exc).__name__}: {exc}") from None
    value = getattr(module, attr, None)
    if value is None:
        raise ToolsNotLoadable(f"module '{module_name}' has no attribute '{attr}'")
    return value


def load_tools(spec: str) -> ToolRegistry:
    """`MODULE:ATTR` (an importable module, or a path to a .py file) -> a ToolRegistry."""
    value = load_attribute(spec, "tools")
    if not isinstance(value, (ToolRegistry, Mapping)):
        raise ToolsNotLoadable(f"'{spec}' is neither a ToolRegistry nor a dict of callables")
    if not isinstance(value, ToolRegistry):
        for name, fn in value.items():
            if not isinstance(name, str) or not name:
                raise ToolsNotLoadable(f"'{spec}' names a tool {name!r}: tool names are "
                                       "non-empty strings")
            if not callable(fn):
                raise ToolsNotLoadable(f"'{spec}': tool '{name}' is a "
                                       f"{type(fn).__name__}, not a callable")
    return ToolRegistry.of(value)


def merged(registries: list[tuple[str, ToolRegistry]]) -> ToolRegistry:
    """One registry of several (each with the `--tools` value it came from); a name
    two of them give is an error naming both."""
    out, given = ToolRegistry(), dict[str, str]()
    for spec, registry in registries:
        for name, tool in registry.tools.items():
            if name in out.tools:
                raise ToolsNotLoadable(f"tool '{name}' is given twice: by {given[name]} and "
                                       f"by {spec}")
            out.tools[name], given[name] = tool, spec
        out.unavailable.update(registry.unavailable)
        out.served = out.served or registry.served
    return out

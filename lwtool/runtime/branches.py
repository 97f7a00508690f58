"""Parallel branches executed by other workers (`lwtool worker`, a PostgreSQL world).

The worker that owns a run (holds its run lock and walks its graph) hands each branch
of a parallel group to the world's branch queue (lwtool.world.postgres_branches,
through lwtool.runtime.own_branches, which executes as many as the owner has slots
for itself); another worker claims a branch, executes its body in a RunState of its
own for the same run (`execute_branch`) and appends the branch's events to the run's
log (the PostgreSQL world appends under the run row's lock, so the hash chain stays
one chain), and the owner hears of its end (`BranchEnds`). The owner fans in the
branch outputs in the group's declared order, as when it executes the branches itself:
the fan-in does not depend on who executed what, nor in which order branches ended.

A branch is self-contained: its steps read only the run input, its item and steps of
its own body (rule parallel.reference_outside_body), so a worker needs nothing of the
owner's scope. A worker that dies loses its lease; the next one replays the branch's
committed steps from the log and runs the step in flight again. A nested parallel
group runs in the process of the worker executing its branch.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from lwtool.harness.workflow import WorkflowHarness
from lwtool.record.budget import run_budget
from lwtool.record.errors import RunFailedError, StepFailure, WaitingForInput
from lwtool.record.journal import Journal
from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT, RunState
from lwtool.runtime.dispatch import run_step
from lwtool.runtime.grants import run_secrets
from lwtool.runtime.parallel import branch_output
from lwtool.runtime.scope import Scope
from lwtool.world.base import DEFAULT_DURABILITY, WorldError, check_durability

POLL_FIRST, POLL_MOST = 0.05, 0.5  # seconds between looks for ended branches unheard of
AWAY_MOST = 2.0  # ... while the world cannot be reached


class BranchEnds:
    """Hears of a worker's branches that other workers end, for every run of the worker
    (lwtool.runtime.own_branches): `watch` a run's branches (from any thread) and each
    one's end is handed to `heard(prefix, (state, result))` on this loop, when told it
    ended (NOTIFY) or, as a notice may be lost with a connection, at a look every
    POLL_MOST seconds."""

    def __init__(self, queue: Any, home: asyncio.AbstractEventLoop,
                 say: Callable[[str], None] | None = None) -> None:
        self.queue = queue  # lwtool.world.postgres_branches.BranchQueue
        self.home = home
        self.say = say or (lambda _: None)
        self._waiting: dict[tuple[str, str], Callable[[str, Any], None]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._news = asyncio.Event()  # a branch of a waiting run may have ended
        self._ended_in: set[str] = set()  # runs a branch of which was heard to end
        self._listener: threading.Thread | None = None

    def watch(self, run_id: str, prefixes: list[str],
              heard: Callable[[str, Any], None]) -> None:
        self.home.call_soon_threadsafe(self._watch, run_id, prefixes, heard)

    def unwatch(self, run_id: str, prefixes: list[str]) -> None:
        self.home.call_soon_threadsafe(self._unwatch, run_id, prefixes)

    def unwatch_run(self, run_id: str) -> None:
        self.home.call_soon_threadsafe(self._unwatch_run, run_id)

    def _unwatch_run(self, run_id: str) -> None:
        for key in [key for key in self._waiting if key[0] == run_id]:
            del self._waiting[key]

    def _watch(self, run_id: str, prefixes: list[str],
               heard: Callable[[str, Any], None]) -> None:
        for prefix in prefixes:
            self._waiting[(run_id, prefix)] = heard
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        if self._listener is None or not self._listener.is_alive():
            self._listen()

    def _unwatch(self, run_id: str, prefixes: list[str]) -> None:
        for prefix in prefixes:
            self._waiting.pop((run_id, prefix), None)

    def _listen(self) -> None:
        """Hear of ended branches (NOTIFY) on a thread of its own while runs wait."""
        def heard(run_id: str) -> None:
            self.home.call_soon_threadsafe(self._heard, run_id)

        self._listener = threading.Thread(
            target=self.queue.listen_ends, args=(lambda: not self._waiting, heard),
            name="lwtool-branch-ends", daemon=True)
        self._listener.start()

    def _heard(self, run_id: str) -> None:
        self._ended_in.add(run_id)
        self._news.set()

    async def _poll(self) -> None:
        """Look for ended branches of every run watched, one query per run: when told
        one ended, else every POLL_MOST seconds."""
        pause = POLL_FIRST
        while self._waiting:
            try:
                await asyncio.wait_for(self._news.wait(), pause)
            except TimeoutError:
                pass
            self._news.clear()
            told, self._ended_in = self._ended_in, set()
            by_run: dict[str, list[str]] = {}
            for run_id, prefix in self._waiting:
                if run_id in told or not told:  # not told: look at every run
                    by_run.setdefault(run_id, []).append(prefix)
            try:
                for run_id, prefixes in by_run.items():
                    for prefix, end in (await asyncio.to_thread(self.queue.ends, run_id,
                                                                prefixes)).items():
                        heard = self._waiting.pop((run_id, prefix), None)
                        if heard is not None:
                            heard(prefix, end)
            except WorldError as exc:  # the server away: the branches wait for it
                self.say(f"cannot look for ended branches: {exc}")
                pause = AWAY_MOST
                continue
            pause = POLL_MOST


def branch_outcome(state: str, result: Any) -> Any:
    """A branch's output from its end (`branch_end`); raises its failure or wait."""
    if state == "failed":
        raise StepFailure(result["cause"], result["message"], result.get("path"),
                          details=result.get("details") or {})
    if state == "waiting":
        raise WaitingForInput(result["requests"])
    return result["output"]


def branch_request(scope: Any, step: dict[str, Any], path: str, key: str,
                   item: Any) -> tuple[str, str, list[str], Any, bool, list[str]]:
    """What the queue needs of one branch, read from its run's own state: (run id,
    prefix, the group's step chain, its item, whether the log holds steps of it, the
    tools its steps call: a worker without them does not claim it)."""
    from lwtool.runtime.needs import needed_tools

    run = scope.run
    prefix = f"{path}[{key}]."
    history = any(p.startswith(prefix) for p in run.journal.paths)
    needs = sorted(needed_tools({"steps": step.get("steps") or []}))
    return run.run_id, prefix, step_chain(run.lwir, step), item, history, needs


def step_chain(lwir: dict[str, Any], target: dict[str, Any]) -> list[str]:
    """The ids from the LWIR's top down to `target` (one of its step objects)."""
    todo: list[tuple[list[str], dict[str, Any]]] = [([], s) for s in lwir.get("steps") or []]
    while todo:
        ids, step = todo.pop()
        chain = [*ids, str(step.get("id"))]
        if step is target:
            return chain
        todo += [(chain, s) for s in step.get("steps") or []]
    raise ValueError(f"step {target.get('id')!r} is not in the workflow")


def step_at(lwir: dict[str, Any], chain: list[str]) -> dict[str, Any]:
    """The step `step_chain` named."""
    steps: list[dict[str, Any]] = lwir.get("steps") or []
    step: dict[str, Any] | None = None
    for sid in chain:
        step = next((s for s in steps if s.get("id") == sid), None)
        if step is None:
            raise ValueError(f"the workflow has no step {'.'.join(chain)}")
        steps = step.get("steps") or []
    if step is None:
        raise ValueError("an empty step chain")
    return step


async def execute_branch(world: Any, task: Any, tools: Any, models: dict[str, str],
                         known: dict[str, Any] | None = None) -> tuple[str, Any]:
    """Execute one claimed branch (lwtool.world.postgres_branches.BranchTask) here;
    `("done", {"output"})`, `("failed", {"cause", "message", "path", "details"})` or
    `("waiting", {"requests"})` (a human.input step of the branch has no answer yet).
    The world's errors (the server away, the step committed by another worker) are
    raised: the claim is left to run out. `known` keeps what does not change (run
    records' input and options, versions) between the branches a worker executes."""
    known = {} if known is None else known
    if len(known) > 512:
        known.clear()
    record = known.get(task.run_id) or world.get_run(task.run_id)
    known[task.run_id] = record
    lwir = known.get(record.version_id) or world.get_version(record.version_id)
    known[record.version_id] = lwir
    if lwir is None:
        return "failed", {"cause": "runtime_config_error", "path": None, "details": {},
                          "message": f"the world has no WorkflowVersion {record.version_id}"}
    try:
        step = step_at(lwir, task.parallel)
    except ValueError as exc:  # the LWIR has no such step: a damaged queue row
        return "failed", {"cause": "runtime_config_error", "message": str(exc),
                          "path": task.prefix, "details": {}}
    options = record.options
    # A branch nobody executed before starts from nothing; else from the run's log.
    journal = Journal.from_events(world.events(task.run_id)) \
        if task.history or task.claims > 1 else Journal()
    state = RunState(world, task.run_id, record.version_id, lwir, record.input, tools,
                     {**dict(options.get("models") or {}), **models}, journal,
                     asyncio.Semaphore(world.max_concurrent_steps),
                     float(options.get("stepTimeoutS") or DEFAULT_STEP_TIMEOUT),
                     WorkflowHarness(), durability=check_durability(
                         str(options.get("durability", DEFAULT_DURABILITY))))
    # the run's budget, held against every reply of the run (other workers' too)
    state.budget = run_budget(options.get("budget"), world, task.run_id,
                              options.get("links"), elsewhere=True)
    try:  # this worker's broker: one without a secret the run needs cannot execute it
        state.grant_secrets(run_secrets([lwir], task.run_id, record.version_id))
    except RunFailedError as exc:
        state.close()
        return "failed", {"cause": exc.cause_code, "message": exc.message,
                          "path": task.prefix, "details": {}}
    state.workspace = dict(options.get("workspace") or {})
    state.children = _children(state, options)  # a branch's invokes start child runs here
    body = Scope(state, step.get("steps") or [], task.prefix, run_step, task.item,
                 has_item=True)

    async def output() -> Any:
        await body.execute()
        return branch_output(body, step)

    try:
        return await branch_end(output())
    finally:
        state.close()


def _children(state: Any, options: dict[str, Any]) -> Any:
    from lwtool.runtime.children import ChildRuns
    from lwtool.runtime.interpreter import resume_run, start_run

    return ChildRuns(state, options.get("budget"), options.get("links"), start_run,
                     resume_run)


async def branch_end(output: Coroutine[Any, Any, Any]) -> tuple[str, Any]:
    """How a branch ended, as the queue keeps it: `("done", {"output"})`, `("failed",
    {"cause", "message", "path", "details"})` or `("waiting", {"requests"})`; the
    world's errors are raised."""
    try:
        return "done", {"output": await output}
    except WaitingForInput as wait:
        return "waiting", {"requests": wait.requests}
    except StepFailure as failure:
        return "failed", {"cause": failure.cause, "message": failure.message,
                          "path": failure.step_path, "details": failure.details}
    except RunFailedError as failed:  # a session that cannot resume (capability drift)
        return "failed", {"cause": failed.cause_code, "message": failed.message,
                          "path": failed.failed_step_path, "details": {}}

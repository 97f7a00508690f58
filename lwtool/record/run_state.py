"""Per-run state shared by every scope and step: the world, the journal, the recorder."""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import os
import signal
import time
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from lwtool.canonical.compact import dumps_bytes, loads
from lwtool.capability.secrets import NO_REDACTION, Redactor
from lwtool.record import sensitive, thread_pools
from lwtool.record.ids import short_hash
from lwtool.record.journal import Journal
from lwtool.record.report import TOKENS
from lwtool.tools import ToolContext, ToolRegistry
from lwtool.world.base import INLINE_LIMIT as INLINE_OUTPUT_LIMIT
from lwtool.world.base import Event, NewEvent, World, fsyncs

FAULT_ENV = "LWTOOL_FAULT_KILL_AFTER"
DEFAULT_STEP_TIMEOUT = 300.0  # seconds per step attempt (cause code `timeout`)
NOTE_DELAY = 0.02  # seconds evidence may wait for the run's next commit
TURN_S = 0.01  # seconds a chain of steps may hold the loop before it lets it run
SESSION_USAGE = TOKENS  # a step session's token counts, as `lwtool report` sums them


# True in a process whose event loop executes several runs at once (`lwtool worker`,
# which sets it for the tasks it starts): no run's commit may block that loop.
LOOP_SHARED: ContextVar[bool] = ContextVar("lwtool_loop_shared", default=False)


@dataclass
class RunState:
    world: World
    run_id: str
    version_id: str
    lwir: dict[str, Any]
    run_input: Any
    tools: ToolRegistry
    models: dict[str, str]
    journal: Journal
    step_slots: asyncio.Semaphore
    step_timeout: float = DEFAULT_STEP_TIMEOUT
    harness: Any = None  # the worker harness (lwtool.harness.workflow.WorkflowHarness)
    on_end: list[Callable[[], None]] = field(default_factory=list)  # e.g. remove scratch
    memo: dict[str, Any] = field(default_factory=dict)  # what the roles compute once per run
    parent_run_id: str | None = None  # the run this one is part of (links.parentRunId)
    # Where parallel branches execute: None, in this process; else an object whose
    # `run(scope, step, path, key, item, here)` has them executed by whichever worker
    # claims them (`here()`: in this state, when it is this run's) and returns the
    # branch's output (lwtool.runtime.own_branches.OwnBranches: a worker's queue).
    branches: Any = None
    # Starts and awaits this run's child runs (workflow.invoke): given by the scheduler
    # (lwtool.runtime.children.ChildRuns); the step executors never start a run.
    children: Any = None
    # a branch of this run was executed in another state (another worker's, or one
    # read from the log): its model replies are in the log only, read back at the end
    branched: bool = False
    # False where the event loop serves other runs too (a worker's runs and branches,
    # LOOP_SHARED): commits then always go to the commit thread instead of blocking the
    # loop for an fsync or a database's round trips.
    inline_commits: bool = field(init=False)
    budget: Any = None  # lwtool.record.budget.Budget: held before each new model call
    # the values of the LWIR's permissions.secrets (given by the broker when the run
    # starts or resumes) and what keeps them out of everything the run writes
    secret_values: dict[str, str] = field(default_factory=dict, repr=False)
    redactor: Redactor = NO_REDACTION
    # the step paths (attempts in this process) of `sensitive: true` steps: their values
    # go to sealed artifacts (lwtool.record.sensitive), never inline
    sensitive_paths: set[str] = field(default_factory=set)
    _sensitive_key: bytes | None = field(default=None, repr=False)
    replies: int = 0  # model replies this execution committed (recorded_model_call)
    durability: str = "strict"  # strict: results fsynced; process: survive a kill only
    artifacts: list[str] = field(default_factory=list)
    _fault: tuple[str, str] | None = None
    _fault_countdown: int = 1
    _config_hashes: dict[int, str] = field(default_factory=dict)
    tools_hash: str = ""
    legacy_tools_hash: str = ""
    workspace: dict[str, Any] = field(default_factory=dict)  # a definition's: workflowId...
    active_steps: int = 0
    step_tasks: int = 0  # unfinished tasks of steps and branches (`spawn`)
    turn_given: float = 0.0  # time.monotonic() when a chain last let the loop run
    _attached: dict[str, list[bytes]] = field(default_factory=dict)
    _usage: dict[str, dict[str, int]] = field(default_factory=dict)
    _queue: list[Any] = field(default_factory=list)
    _notes: list[NewEvent] = field(default_factory=list)
    _note_timer: asyncio.TimerHandle | None = None
    _notes_since: float = 0.0  # loop time the oldest pending note was made
    _flusher: asyncio.Task[None] | None = None
    committer: thread_pools.RunPool = field(init=False)
    tool_threads: thread_pools.RunPool = field(init=False)

    def close(self) -> None:
        """Commit notes still pending and release the run's threads (after its last
        commit)."""
        if self._note_timer is not None:
            self._note_timer.cancel()
            self._note_timer = None
        self.flush_notes()
        thread_pools.give_back(self.committer, drain=True)
        thread_pools.give_back(self.tool_threads)

    def __post_init__(self) -> None:
        # the tools a step's session may be given: the registry's that the workflow
        # permits (a worker with more tools than another resumes its runs alike)
        permitted = {str(n) for n in (self.lwir.get("permissions") or {}).get("tools") or []}
        self.tools_hash = short_hash([n for n in self.tools.names() if n in permitted])
        # what sessions recorded before: every registered tool (still accepted)
        self.legacy_tools_hash = short_hash(self.tools.names())
        self.inline_commits = not LOOP_SHARED.get()
        # Own threads: commits must never queue behind sync tools in the default pool,
        # and sync tools get as many threads as the world lets steps run at once.
        # (kept between the runs of a process: thread_pools)
        self.committer = thread_pools.take(1, "lwtool-commit")
        self.tool_threads = thread_pools.take(self.world.max_concurrent_steps, "lwtool-tool")
        spec = os.environ.get(FAULT_ENV)
        if spec and "@" in spec:
            event_type, _, pattern = spec.partition("@")
            pattern, _, nth = pattern.partition("#")
            self._fault = (event_type, pattern)
            self._fault_countdown = int(nth) if nth.isdigit() and int(nth) > 0 else 1

    def grant_secrets(self, values: dict[str, str]) -> None:
        """The run's secrets (permissions.secrets' values): every event and artifact it
        writes has them masked from now on."""
        self.secret_values = dict(values)
        self.redactor = Redactor(values)

    def tool_context(self, step: dict[str, Any], path: str) -> ToolContext:
        """What a tool called for the step at `path` may read: its granted secrets."""
        names = step.get("secrets") or ()
        return ToolContext(self.run_id, path, {n: self.secret_values[n] for n in names
                                               if n in self.secret_values})

    @property
    def sensitive_key(self) -> bytes:
        if self._sensitive_key is None:
            self._sensitive_key = self.world.sensitive_key()
        return self._sensitive_key

    async def sealed_ref(self, value: Any) -> str:
        """Store a sensitive value as a sealed artifact now; its ref."""
        return await self.world.put_artifact(sensitive.seal(self.sensitive_key, value),
                                             self.fsyncs)

    async def read_ref(self, ref: str) -> Any:
        """The JSON value an artifact holds, sealed (sensitive) or not."""
        data = await self.world.get_artifact(ref)
        return sensitive.unseal(data) if sensitive.sealed(data) else loads(data)

    def redacted(self, value: Any) -> Any:
        """`value` (JSON) with the run's secret values masked (itself when none)."""
        return self.redactor.value(value) if self.redactor else value

    def _clean(self, events: list[NewEvent]) -> list[NewEvent]:
        if not self.redactor:
            return events
        return [e if (p := self.redactor.value(e.payload)) is e.payload
                else NewEvent(e.type, p, e.step_path) for e in events]

    def config_hash(self, part: Any) -> str:
        """The hash of a part of the locked LWIR (a step's configuration, an output
        schema), cached by identity: the version's objects live as long as the run, and
        every visit and attempt shares them."""
        key = id(part)
        found = self._config_hashes.get(key)
        if found is None:
            found = self._config_hashes[key] = short_hash(part)
        return found

    @property
    def fsyncs(self) -> bool:
        """Whether this run's results are flushed to the disk (strict durability)."""
        return fsyncs(self.durability)

    @property
    def workflow_view(self) -> dict[str, Any]:
        metadata = self.lwir.get("metadata") or {}
        return {"name": metadata.get("name"), "version": metadata.get("version"),
                "runId": self.run_id, "versionId": self.version_id}

    async def record(self, events: list[NewEvent], durable: bool = True,
                     artifacts: list[tuple[str, bytes]] | None = None,
                     status: str | None = None) -> list[Event]:
        """Append events (after any notes still pending); returns once they are
        committed, with the committed copies of `events`.

        With one step in flight (a chain), the commit runs at once: a thread hand-off
        would cost more than the fsync. With several in flight, appends join a group
        commit: a flusher task commits everything queued in one transaction in a worker
        thread, so one fsync serves every branch that finished meanwhile and the loop
        keeps executing the others. `durable` commits are fsynced in strict durability
        only; in process durability nothing is.
        """
        durable = durable and self.fsyncs
        notes = self._take_notes()
        batch = self._clean([*notes, *events] if notes else events)
        if self.alone():
            committed = self.world.append(self.run_id, batch, status, artifacts or (), durable)
        else:
            committed = await self._enqueue(batch, artifacts or [], status, durable)
        if self._fault is not None:
            self._maybe_die(committed)
        if status in ("completed", "failed"):
            for hook in self.on_end:
                hook()
        return committed[len(notes):]

    def alone(self) -> bool:
        """Nothing else of the run is in flight (at most one step executing, no commit
        queued), and the loop serves this run only: a commit may block the loop (it is
        made at once), and so may the wait for a sync tool's thread (Tool.invoke)."""
        return self.inline_commits and self.active_steps <= 1 and not self._queue \
            and not self._flushing()

    def turn_due(self) -> bool:
        """Whether a chain of steps, which awaits nothing that yields when its steps are
        quick (inline commits, quick tools), should let the loop run now: signals
        (Ctrl-C, SIGTERM), deadlines, timers and sibling branches wait for that."""
        return time.monotonic() - self.turn_given >= TURN_S

    def sole_step(self) -> bool:
        """`alone`, and no other step or branch is in a task of its own, not even one
        that has not started yet: the loop may be held up by this step's tool call."""
        return self.step_tasks <= 1 and self.alone()

    def spawn(self, step: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A task for a step or a parallel branch, counted until it is done."""
        task = asyncio.create_task(step)
        self.step_tasks += 1
        task.add_done_callback(self._spawned_done)
        return task

    def _spawned_done(self, task: asyncio.Task[Any]) -> None:
        self.step_tasks -= 1

    def _flushing(self) -> bool:
        return self._flusher is not None and not self._flusher.done()

    def note(self, events: list[NewEvent], defer: bool = True) -> None:
        """Record evidence (an attempt started) without waiting for it: it rides along
        with the run's next commit (a fast step's evidence and result share one
        transaction), or is committed on its own, without an fsync, once it has waited
        NOTE_DELAY seconds (a slow step's shows while it runs). `defer=False` commits it
        now (still without an fsync): a call's intent, logged before the call is made.
        Order is kept: notes always precede what is recorded after them. A killed
        process may lose a note that was not yet committed, never a result."""
        if not self._notes:
            self._notes_since = asyncio.get_running_loop().time()
        self._notes.extend(events)
        if not defer:
            self._commit_notes()
        elif self._note_timer is None:
            self._note_timer = asyncio.get_running_loop().call_later(NOTE_DELAY,
                                                                     self._notes_due)

    def _notes_due(self) -> None:
        """The note timer. It is not cancelled when a commit takes the notes (one timer
        serves many fast steps): notes younger than NOTE_DELAY wait for the rest."""
        self._note_timer = None
        if not self._notes:
            return
        wait = self._notes_since + NOTE_DELAY - asyncio.get_running_loop().time()
        if wait > 0.001:
            self._note_timer = asyncio.get_running_loop().call_later(wait, self._notes_due)
            return
        self._commit_notes()

    def _take_notes(self) -> list[NewEvent]:
        notes, self._notes = self._notes, []
        return notes

    def _commit_notes(self) -> None:
        """Commit the pending notes (without an fsync). A failed commit puts them back:
        the next record carries them, and reports the store's error."""
        notes = self._clean(self._take_notes())
        if not notes:
            return
        if not self.alone():
            future = self._enqueue(notes, [], None, False)
            # Nobody awaits a note: a failed commit reaches the step through its own
            # closing events (same or a later batch), so the note's copy is consumed.
            future.add_done_callback(lambda done: done.cancelled() or done.exception())
            return
        try:
            committed = self.world.append(self.run_id, notes, None, (), False)
        except Exception:  # noqa: BLE001 - surfaced by the next record
            self._notes[:0] = notes
            return
        if self._fault is not None:
            self._maybe_die(committed)

    def flush_notes(self) -> None:
        """Commit pending notes now (the run is being left: cancelled, interrupted)."""
        notes = self._clean(self._take_notes())
        if notes:
            try:
                self.world.append(self.run_id, notes, None, (), False)
            except Exception:  # noqa: BLE001 - evidence only; the run is ending anyway
                pass

    def _enqueue(self, events: list[NewEvent], artifacts: list[tuple[str, bytes]],
                 status: str | None, durable: bool) -> asyncio.Future[list[Event]]:
        future: asyncio.Future[list[Event]] = asyncio.get_running_loop().create_future()
        self._queue.append((events, artifacts, status, durable, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush())
        return future

    async def _flush(self) -> None:
        """Commit everything queued, batch after batch, each batch in one transaction
        (one fsync) run in a worker thread, so the loop keeps executing other steps."""
        while self._queue:
            batch, self._queue = self._queue, []
            events = [e for item in batch for e in item[0]]
            artifacts = [a for item in batch for a in item[1]]
            status = next((item[2] for item in reversed(batch) if item[2]), None)
            durable = any(item[3] for item in batch)
            try:
                committed = await asyncio.get_running_loop().run_in_executor(
                    self.committer, self.world.append, self.run_id, events, status,
                    artifacts, durable)
            except BaseException as exc:  # noqa: BLE001 - handed to every waiter
                for item in batch:
                    if not item[4].done():
                        item[4].set_exception(exc)
                continue
            start = 0
            for item in batch:
                count = len(item[0])
                if not item[4].done():
                    item[4].set_result(committed[start:start + count])
                start += count

    def _maybe_die(self, committed: list[Event]) -> None:
        """Fault injection for durability tests: SIGKILL this process right after the
        N-th matching event this process commits (LWTOOL_FAULT_KILL_AFTER=
        Type@stepPathGlob, or Type@stepPathGlob#N; N defaults to 1)."""
        assert self._fault is not None
        event_type, pattern = self._fault
        for event in committed:
            if event.type == event_type and fnmatch.fnmatchcase(event.step_path or "", pattern):
                self._fault_countdown -= 1
                if self._fault_countdown <= 0:
                    os.kill(os.getpid(), signal.SIGKILL)

    def attach(self, path: str, data: bytes) -> None:
        """Keep a payload of the step at `path` (a prompt, a response) as an artifact of
        its result: stored with the step's commit and listed in its envelope."""
        if self.redactor:
            data = self.redactor.data(data)
        if path in self.sensitive_paths:
            data = sensitive.seal_bytes(self.sensitive_key, data)
        self._attached.setdefault(path, []).append(data)

    def add_usage(self, path: str, usage: dict[str, int]) -> None:
        """Count a model reply's tokens toward the step session at `path`."""
        total = self._usage.setdefault(path, dict.fromkeys(SESSION_USAGE, 0))
        for key in SESSION_USAGE:
            total[key] += int(usage.get(key, 0))

    def session_usage(self, path: str) -> dict[str, int]:
        """The tokens of the step session at `path` (zeros without model calls)."""
        return self._usage.pop(path, None) or dict.fromkeys(SESSION_USAGE, 0)

    async def _store(self, data: bytes, inline: list[tuple[str, bytes]]) -> str:
        """Small payloads ride along in the step's own commit; large ones are written
        (and fsynced) now, before the event that names them."""
        if len(data) > INLINE_OUTPUT_LIMIT:
            return await self.world.put_artifact(data, self.fsyncs)
        return _inline(data, inline)

    async def envelope(self, value: Any, uses: str, mode: dict[str, Any] | None,
                       path: str | None = None
                       ) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        """The result envelope of an output, and small artifacts to commit with it. A
        sensitive step's (`path` in sensitive_paths) is sealed and never inline."""
        hidden = path is not None and path in self.sensitive_paths
        data = sensitive.seal(self.sensitive_key, value) if hidden else dumps_bytes(value)
        inline: list[tuple[str, bytes]] = []
        # Most outputs are small: no coroutine to store one inline.
        ref = _inline(data, inline) if len(data) <= INLINE_OUTPUT_LIMIT \
            else await self._store(data, inline)
        extras = self._attached.pop(path, None) if path else None
        attached = [await self._store(extra, inline) for extra in extras] if extras else []
        envelope: dict[str, Any] = {
            "outputRef": ref,
            "artifacts": attached,
            "metadata": {"uses": uses, "outputMode": (mode or {}).get("mode"),
                         "schemaHash": self.config_hash(mode["schema"])
                         if mode and "schema" in mode else None},
        }
        if hidden:
            envelope["sensitive"] = True
        elif len(data) <= INLINE_OUTPUT_LIMIT:
            envelope = {"output": value, **envelope}
        self.artifacts.extend([ref, *attached])
        return envelope, inline

    async def output_of(self, payload: dict[str, Any], from_artifact: bool = False) -> Any:
        """A committed step's output: the inline copy in its event (verified with the
        log's hash chain), else (or when `from_artifact`) read and verified from its
        outputRef."""
        envelope = payload.get("envelope") or {}
        ref = envelope.get("outputRef")
        if ref is not None:
            self.artifacts.append(ref)  # the run's result lists each once
        if ref is None or ("output" in envelope and not from_artifact):
            return envelope.get("output")
        return await self.read_ref(ref)


def _inline(data: bytes, inline: list[tuple[str, bytes]]) -> str:
    """Keep a small payload to commit with its step; its artifact ref."""
    ref = f"artifact://sha256:{hashlib.sha256(data).hexdigest()}"
    inline.append((ref, data))
    return ref


def step_timeout(step: dict[str, Any], run_timeout: float) -> tuple[float, str]:
    """Seconds one attempt of `step` may take, and where that figure comes from: the
    step's own `timeoutMs`, else the run's step timeout."""
    own = step.get("timeoutMs")
    if isinstance(own, int) and not isinstance(own, bool) and own > 0:
        return own / 1000, "the step's timeoutMs"
    return run_timeout, "the run's step timeout"

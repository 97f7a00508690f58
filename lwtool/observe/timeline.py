"""A run as a timeline, folded from its events one at a time: step attempts (with their
parallel group and branch), model and tool calls, tokens and cost. The one reading of
the event log that live progress, the web inspector and the OpenTelemetry export share.

Folding is incremental (`Timeline.feed`), so a live view feeds new events as they are
committed; an event already folded (by `seq`) is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwtool.record.ids import reserved_ids
from lwtool.record.report import TOKENS, add_usage, empty_totals, reply_usage
from lwtool.world.base import Event


@dataclass
class Call:
    """One model call (`harness.model.*`) or tool call (`harness.tool_call.*`)."""

    call_id: str
    kind: str  # model | tool
    name: str  # the tool's name, or provider/modelId once the model responded
    started: float
    ended: float | None = None
    status: str = "running"  # running | done | failed | interrupted
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    caller: str = ""  # a tool call's caller: model | code
    error: str = ""
    provider: str = ""
    model_id: str = ""
    request_model: str = ""  # the litellm model string the call asked for
    seq: int = 0  # of its first event
    sub_run: str = ""  # the sub-run an orchestrator's call reserved (record.ids)


@dataclass
class Attempt:
    """One attempt of one step path (a parallel group has one attempt per visit, opened
    by its first branch step)."""

    path: str
    step_id: str
    uses: str
    attempt: int
    started: float
    ended: float | None = None
    status: str = "running"  # running | done | failed | skipped | interrupted
    error: str = ""
    cause: str = ""
    calls: list[Call] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)
    output_ref: str = ""
    tool: str = ""  # a tool.call step's tool (harness.execute_step.started names it)
    waiting: str = ""  # why a model call of it waits for a slot (model limits), if it does
    seq: int = 0  # of the event that opened it
    last: float = 0.0  # when its last event was committed

    @property
    def branch(self) -> tuple[str, str] | None:
        """(group path, item key) of the innermost parallel branch holding this step."""
        return branch_of(self.path)


@dataclass
class Timeline:
    run_id: str
    status: str = "running"  # running | waiting | completed | failed
    version_id: str = ""
    started: float | None = None
    ended: float | None = None
    last_seq: int = 0
    attempts: list[Attempt] = field(default_factory=list)
    calls: dict[str, Call] = field(default_factory=dict)
    totals: dict[str, Any] = field(default_factory=empty_totals)  # as `lwtool report` sums
    failure: dict[str, Any] = field(default_factory=dict)
    asks: dict[str, str] = field(default_factory=dict)  # human.input path -> its prompt
    _open: dict[str, Attempt] = field(default_factory=dict)  # path -> its running attempt

    @classmethod
    def of(cls, run_id: str, events: list[Event]) -> Timeline:
        timeline = cls(run_id)
        timeline.feed(events)
        return timeline

    def feed(self, events: list[Event]) -> None:
        for event in events:
            if event.seq > self.last_seq:
                self._fold(event)
                self.last_seq = event.seq

    # -- queries -----------------------------------------------------------------------

    @property
    def usage(self) -> dict[str, int]:
        return {key: self.totals[key] for key in TOKENS}

    @property
    def cost_usd(self) -> float | None:
        return self.totals["costUsd"]  # type: ignore[no-any-return]

    @property
    def priced_calls(self) -> int:
        return int(self.totals["pricedCalls"])

    @property
    def unpriced_calls(self) -> int:
        return int(self.totals["unpricedCalls"])

    def loose_calls(self) -> list[Call]:
        """Calls made outside any step attempt (a harness session's own turns)."""
        attached = {id(call) for attempt in self.attempts for call in attempt.calls}
        return [call for call in self.calls.values() if id(call) not in attached]

    def running(self) -> list[Attempt]:
        return [a for a in self._open.values() if a.status == "running"]

    def finished(self) -> list[Attempt]:
        return [a for a in self.attempts if a.status in ("done", "skipped")]

    def branches(self) -> dict[str, dict[str, str]]:
        """group path -> item key -> running | done | failed (by the branch's steps)."""
        out: dict[str, dict[str, str]] = {}
        for attempt in self.attempts:
            where = attempt.branch
            if where is None:
                continue
            group, key = where
            states = out.setdefault(group, {})
            now = states.get(key, "done")
            if attempt.status == "failed" and now != "running":
                now = "failed"
            elif attempt.status == "running":
                now = "running"
            states[key] = now
        return out

    def counts(self, top_steps: list[str]) -> tuple[int, int]:
        """(step paths done or skipped, step paths known): each path seen so far, and
        the workflow's top-level steps (`top_steps`, their ids) not reached yet."""
        paths = {a.path for a in self.attempts}
        done = {a.path for a in self.finished()}
        reached = {strip_visit(p) for p in paths if branch_of(p) is None}
        return len(done), len(paths) + sum(1 for step in top_steps if step not in reached)

    def elapsed(self, now: float) -> float:
        """Seconds from the run's start to its end, or to `now` while it runs."""
        if self.started is None:
            return 0.0
        return max(0.0, (self.ended if self.ended is not None else now) - self.started)

    # -- folding -----------------------------------------------------------------------

    def _fold(self, event: Event) -> None:
        kind, payload, path = event.type, event.payload, event.step_path
        if self.status == "waiting" and kind not in ("RunWaiting", "HumanInputReceived"):
            self.status, self.ended = "running", None  # resumed
        if kind == "RunWaiting":  # stopped until a person answers (human.input)
            self.status, self.ended = "waiting", event.at
        elif kind == "RunStarted":
            self.started = event.at if self.started is None else self.started
            self.version_id = str(payload.get("workflowVersionId", ""))
        elif kind in ("RunCompleted", "RunFailed"):
            self.status = "completed" if kind == "RunCompleted" else "failed"
            self.ended = event.at
            if kind == "RunFailed":
                self.failure = dict(payload)
            for attempt in self._open.values():  # a group whose run ended without it
                if attempt.status == "running":
                    attempt.status, attempt.ended = "failed", event.at
            self._open.clear()
        elif kind == "RunRetried":  # `lwtool retry`: running again from its failure
            self.status, self.ended, self.failure = "running", None, {}
        elif path is not None:
            self._fold_step(kind, payload, path, event)

    def _fold_step(self, kind: str, payload: dict[str, Any], path: str, event: Event) -> None:
        if path in self._open and kind != "StepAttemptStarted":
            self._open[path].last = event.at
        if kind == "HumanInputRequested":
            self.asks[path] = str(payload.get("prompt", ""))
        elif kind == "HumanInputReceived":
            self.asks.pop(path, None)
        elif kind == "StepAttemptStarted":
            self._start(path, payload, event)
        elif kind in ("StepCompleted", "StepAttemptFailed", "StepSkipped"):
            self._finish(path, kind, payload, event)
        elif kind == "harness.execute_step.started" and path in self._open:
            self._open[path].tool = str(payload.get("toolName") or "")
        elif kind == "harness.model.waiting":  # a model limit holds the call back
            if path in self._open:
                self._open[path].waiting = str(payload.get("reason", ""))
        elif kind.startswith("harness.model.") or kind.startswith("harness.tool_call."):
            if path in self._open:
                self._open[path].waiting = ""
            self._call(path, kind, payload, event)

    def _start(self, path: str, payload: dict[str, Any], event: Event) -> Attempt:
        self._open_groups(path, event)
        killed = self._open.get(path)
        if killed is not None and killed.status == "running":  # started again: resumed
            _interrupted(killed)
        attempt = Attempt(path, str(payload.get("stepId", "")), str(payload.get("uses", "")),
                          int(payload.get("attempt", 1)), event.at, seq=event.seq,
                          last=event.at)
        self.attempts.append(attempt)
        self._open[path] = attempt
        return attempt

    def _open_groups(self, path: str, event: Event) -> None:
        """A parallel group has no StepAttemptStarted: its first branch step opens it."""
        where = branch_of(path)
        while where is not None:
            group = where[0]
            if group not in self._open:
                step_id = strip_visit(group).rsplit(".", 1)[-1].split("[", 1)[0]
                attempt = Attempt(group, step_id, "parallel", 1, event.at, seq=event.seq)
                self.attempts.append(attempt)
                self._open[group] = attempt
            where = branch_of(group)

    def _finish(self, path: str, kind: str, payload: dict[str, Any], event: Event) -> None:
        attempt = self._open.pop(path, None)
        if attempt is None:  # skipped, or a group that never opened (no branches)
            self._open_groups(path, event)
            attempt = Attempt(path, str(payload.get("stepId", "")),
                              str(payload.get("uses", "")), int(payload.get("attempt", 1)),
                              event.at, seq=event.seq)
            self.attempts.append(attempt)
        attempt.ended = event.at
        if kind == "StepCompleted":
            attempt.status = "done"
            envelope = payload.get("envelope") or {}
            attempt.artifacts = [str(a) for a in envelope.get("artifacts") or []]
            attempt.output_ref = str(envelope.get("outputRef") or "")
        elif kind == "StepSkipped":
            attempt.status = "skipped"
        else:
            attempt.status = "failed"
            attempt.error = str(payload.get("error", ""))
            attempt.cause = str(payload.get("causeCode", ""))

    def _call(self, path: str, kind: str, payload: dict[str, Any], event: Event) -> None:
        call_id = str(payload.get("callId", ""))
        call = self.calls.get(call_id)
        if call is None:
            tool = kind.startswith("harness.tool_call.")
            call = Call(call_id, "tool" if tool else "model",
                        str(payload.get("toolName", "")), event.at,
                        caller=str(payload.get("caller", "")), seq=event.seq,
                        sub_run=reserved_ids(self.run_id, payload).get("subRunId", ""))
            self.calls[call_id] = call
            owner = self._open.get(path)
            if owner is not None:
                owner.calls.append(call)
        if kind.endswith(".called") or kind.endswith(".started"):
            call.request_model = str((payload.get("request") or {}).get("model", ""))
            return
        duration = float(payload.get("durationMs") or 0) / 1000
        call.ended = event.at
        call.started = min(call.started, event.at - duration)
        if kind.endswith(".failed"):
            call.status, call.error = "failed", str(payload.get("error", ""))
            return
        call.status = "done"
        if kind == "harness.model.responded":
            model = payload.get("model") or {}
            call.provider, call.model_id = str(model.get("provider", "")), str(
                model.get("modelId", ""))
            call.name = f"{call.provider}/{call.model_id}" if call.provider else call.model_id
            usage, call.cost_usd = reply_usage(payload)
            call.usage = {key: int(usage.get(key, 0)) for key in TOKENS}
            add_usage(self.totals, usage, call.cost_usd)


def _interrupted(attempt: Attempt) -> None:
    """An attempt whose process died (the step was started again by a resume): it ended
    with its last committed event, and so did its calls that had not."""
    attempt.status, attempt.ended = "interrupted", attempt.last
    for call in attempt.calls:
        if call.status == "running":
            call.status, call.ended = "interrupted", max(call.started, attempt.last)


def top_step_ids(version: dict[str, Any]) -> list[str]:
    """The ids of a version's top-level steps (what `Timeline.counts` takes)."""
    return [str(step.get("id")) for step in version.get("steps") or []
            if isinstance(step, dict)]


def strip_visit(path: str) -> str:
    """`a[k].b.visit[2]` -> `a[k].b`."""
    head, dot, tail = path.rpartition(".")
    return head if dot and tail.startswith("visit[") and tail.endswith("]") else path


def branch_of(path: str) -> tuple[str, str] | None:
    """(group path, item key) of the innermost branch a step path lies in:
    `g[k1].h[k2].s.visit[0]` -> (`g[k1].h`, `k2`); None at the top level."""
    cut = strip_visit(path).rfind("].")
    if cut < 0:
        return None
    head = path[:cut]
    group, _, key = head.rpartition("[")
    return (group, key) if group else None

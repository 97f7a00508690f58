"""Scheduling one step list (the workflow's, or one parallel branch's body).

Rules (README "Runtime semantics"): a step runs once its needs are done. A forward
target of a decision (one that does not lead back to the decision through needs) is
gated: it runs only when a decision chooses it; when the decision chooses otherwise,
it and every step that needs it are skipped. A back-edge (a decision choosing a step
that leads to it) starts a new visit of that step and of every step after it in the
loop; a step's visits are bounded by `maxVisits`. `to: end` ends the scope: nothing
more starts in it. When a step fails, the steps still running are cancelled (a
cancelled attempt records nothing) and the failure is the scope's. A step that waits
for a person (human.input) is not a failure: the scope runs every step that does not
need it, then passes all its waits up together (WaitingForInput); an answer given while
other steps still run sets the waiting step going again at once (lwtool.runtime.answers).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import Any

from lwtool.record.errors import StepFailure, WaitingForInput
from lwtool.record.run_state import RunState
from lwtool.world.base import NewEvent

# How a scope runs one visit of a step: (scope, step id, path, visit) -> (result, seq)
# (lwtool.runtime.dispatch.run_step, given by the interpreter).
StepRunner = Callable[["Scope", str, str, int], Coroutine[Any, Any, tuple[Any, int]]]

END = "end"
_NONE: frozenset[str] = frozenset()


def dependents_of(steps: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {sid: set() for sid in steps}
    for sid, step in steps.items():
        for need in step.get("needs") or []:
            if need in out:
                out[need].add(sid)
    return out


class StepsView(Mapping[str, dict[str, Any]]):
    """`steps` as expressions see it: id -> {output, lastOutput, allVisits}, built per
    access (a step reads one or two steps, not the whole scope)."""

    def __init__(self, outputs: dict[str, list[Any]]) -> None:
        self._outputs = outputs

    def __getitem__(self, step_id: str) -> dict[str, Any]:
        outputs = self._outputs[step_id]
        last = outputs[-1] if outputs else None
        return {"output": last, "lastOutput": last, "allVisits": list(outputs)}

    def get(self, step_id: str, default: Any = None) -> Any:  # Mapping's, one call less
        return self[step_id] if step_id in self._outputs else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)


def decision_targets(step: dict[str, Any]) -> list[str]:
    """Where a decision may go: its cases' `to`, then its `default`."""
    with_ = step.get("with") or {}
    return [c.get("to") for c in with_.get("cases") or []] + [with_.get("default")]


def closure(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen = {start}
    todo = [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


class ScopeShape:
    """What never changes about a step list while a run executes it: its steps in
    order, their needs and dependents, the gated targets of its decisions, its loops'
    exits, the steps whose paths carry visits. Worked out once per run and list (every
    branch of a parallel group shares its body's)."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = {s["id"]: s for s in steps}
        self.order = [s["id"] for s in steps]
        self.position = {sid: i for i, sid in enumerate(self.order)}
        self.needs = {sid: [n for n in s.get("needs") or []] for sid, s in self.steps.items()}
        self.dependents = dependents_of(self.steps)
        self._downstream: dict[str, set[str]] = {}
        self.gated: set[str] = set()
        for sid, step in self.steps.items():
            if step.get("uses") == "decision":
                for target in decision_targets(step):
                    if target in self.steps and sid not in self.downstream(target):
                        self.gated.add(target)
        loop_of = self._loop_members()
        self.loop_exits, self.loop_waiters = self._loop_exits(loop_of)
        # Steps whose paths carry `.visit[N]`: multi-visit steps, and decisions on a loop
        # (they need no maxVisits of their own, yet run once per round).
        self.repeating = {sid for sid, s in self.steps.items()
                          if int(s.get("maxVisits", 1)) > 1
                          or (s.get("uses") == "decision" and sid in loop_of)}

    @staticmethod
    def of(run: RunState, steps: list[dict[str, Any]]) -> ScopeShape:
        """The shape of `steps` (a list of the run's locked LWIR), made once per run."""
        shapes: dict[int, tuple[list[dict[str, Any]], ScopeShape]] = \
            run.memo.setdefault("scope_shapes", {})
        found = shapes.get(id(steps))
        if found is None or found[0] is not steps:
            found = shapes[id(steps)] = (steps, ScopeShape(steps))
        return found[1]

    def _loop_members(self) -> dict[str, frozenset[str]]:
        """{step: the loop (strongly connected component with a decision) it is on}."""
        decisions = [sid for sid, s in self.steps.items() if s.get("uses") == "decision"]
        if not decisions:
            return {}
        from lwtool.validate.graph import is_cycle, strongly_connected

        edges: dict[str, list[str]] = {sid: sorted(self.dependents[sid]) for sid in self.steps}
        for sid in decisions:
            edges[sid] += [t for t in decision_targets(self.steps[sid]) if t in self.steps]
        loop_of: dict[str, frozenset[str]] = {}
        for component in strongly_connected(list(self.steps), edges):
            if is_cycle(component, edges) and any(c in decisions for c in component):
                for member in component:
                    loop_of[member] = frozenset(component)
        return loop_of

    def _loop_exits(self, loop_of: dict[str, frozenset[str]]
                    ) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """A step outside a loop that needs a step inside it waits for the loop to be
        left: {step: decisions of that loop that must be done}, and the reverse map (who
        to look at again when such a decision completes). Without this, the step would
        run on the loop's first round and again on each later one."""
        exits: dict[str, set[str]] = {}
        waiters: dict[str, set[str]] = {}
        for sid in self.steps:
            for need in self.needs[sid]:
                loop = loop_of.get(need)
                if loop is None or sid in loop:
                    continue
                for decision in (d for d in loop if self.steps[d].get("uses") == "decision"):
                    exits.setdefault(sid, set()).add(decision)
                    waiters.setdefault(decision, set()).add(sid)
        return exits, waiters

    def downstream(self, step_id: str) -> set[str]:
        """The step and every step that needs it, directly or not (computed once)."""
        found = self._downstream.get(step_id)
        if found is None:
            found = self._downstream[step_id] = closure(step_id, self.dependents)
        return found


class Scope:
    """One step list being executed: `prefix` is prepended to step paths, `item` is the
    current parallel item (None at top level)."""

    def __init__(self, run: RunState, steps: list[dict[str, Any]], prefix: str,
                 run_step: StepRunner, item: Any = None, has_item: bool = False,
                 on_last_execution: Callable[[], None] | None = None) -> None:
        self.run = run
        self.run_step = run_step
        self.on_last_execution = on_last_execution
        self.prefix = prefix
        self.item = item
        self.has_item = has_item
        shape = ScopeShape.of(run, steps)
        self.steps, self.order, self.position = shape.steps, shape.order, shape.position
        self.needs, self.dependents, self.gated = shape.needs, shape.dependents, shape.gated
        self.loop_exits, self.loop_waiters = shape.loop_exits, shape.loop_waiters
        self.repeating = shape.repeating
        self.downstream = shape.downstream
        self.visits = dict.fromkeys(self.steps, 0)
        self.outputs: dict[str, list[Any]] = {sid: [] for sid in self.steps}
        self.done: set[str] = set()
        self.skipped: set[str] = set()
        self.released: set[str] = set()  # gated targets a decision chose
        self.rejected: set[str] = set()  # gated targets chosen against (and not since)
        self.dirty: set[str] = set(self.steps)  # steps whose readiness may have changed
        self.waiting: set[str] = set()  # steps waiting for a person (human.input)
        self.ended = False
        self.last_step: str | None = None  # the most recently committed non-decision step
        self.last_seq = 0  # ... and the commit position of its result

    # -- expression scope ---------------------------------------------------------------


    def expression_scope(self, step_id: str, path: str, visit: int,
                         attempt: int) -> dict[str, Any]:
        scope: dict[str, Any] = {
            "input": self.run.run_input,
            "steps": StepsView(self.outputs),
            "workflow": self.run.workflow_view,
            "step": {"id": step_id, "path": path, "visit": visit, "attempt": attempt},
        }
        if self.has_item:
            scope["item"] = self.item
        return scope

    def path_of(self, step_id: str, visit: int) -> str:
        suffix = f".visit[{visit}]" if step_id in self.repeating else ""
        return f"{self.prefix}{step_id}{suffix}"

    # -- scheduling -----------------------------------------------------------------------

    def _runnable(self, running: set[str] | frozenset[str]) -> list[str]:
        """Ready steps in document order. Only `dirty` steps are looked at: readiness
        changes only when a need completes, a decision releases a step or a back-edge
        resets it, and each of those marks the steps concerned dirty."""
        if self.ended or not self.dirty:
            return []
        ready = []
        done, dirty, exits = self.done, self.dirty, self.loop_exits
        for sid in sorted(dirty, key=self.position.__getitem__) if len(dirty) > 1 else dirty:
            if sid in done or sid in self.skipped or sid in running or sid in self.waiting:
                continue
            if sid in self.gated and sid not in self.released:
                continue
            if done.issuperset(self.needs[sid]) and (sid not in exits
                                                     or done.issuperset(exits[sid])):
                ready.append(sid)
        dirty.clear()
        return ready

    def branch(self, steps: list[dict[str, Any]], prefix: str, item: Any,
               on_last_execution: Callable[[], None]) -> Scope:
        """A parallel branch's scope: its steps, run the way this scope runs its own."""
        return Scope(self.run, steps, prefix, self.run_step, item, has_item=True,
                     on_last_execution=on_last_execution)

    async def execute(self) -> None:
        run_step = self.run_step
        running: dict[asyncio.Task[Any], str] = {}
        waits: dict[str, list[dict[str, Any]]] = {}  # a waiting step -> its requests
        try:
            while True:
                runnable = self._runnable(set(running.values()) if running else _NONE)
                if len(runnable) == 1 and not running:
                    # Nothing else is running or can start until this step is done (only
                    # a completion makes steps runnable): run it here, without a task.
                    if self.run.turn_due():
                        await asyncio.sleep(0)
                        self.run.turn_given = time.monotonic()
                    sid = runnable[0]
                    path, visit = self._start_visit(sid)
                    try:
                        result, seq = await run_step(self, sid, path, visit)
                    except WaitingForInput as wait:
                        self.waiting.add(sid)
                        waits[sid] = wait.requests
                        continue
                    self._completed(sid, result, seq)
                    continue
                for sid in runnable:
                    path, visit = self._start_visit(sid)
                    task = self.run.spawn(run_step(self, sid, path, visit))
                    running[task] = sid
                if not running:
                    break
                if waits:  # while the rest runs, an answer given meanwhile wakes its step
                    finished = await self._wait_or_answer(running, waits)
                else:
                    finished, _ = await asyncio.wait(running,
                                                     return_when=asyncio.FIRST_COMPLETED)
                # A failure first (it raises), then waits, then results in commit order.
                for task in sorted(finished, key=lambda t: self.position[running[t]]):
                    if task.exception() is not None \
                            and not isinstance(task.exception(), WaitingForInput):
                        running.pop(task)
                        task.result()
                for task in sorted(finished, key=lambda t: self.position[running[t]]):
                    paused = task.exception()
                    if isinstance(paused, WaitingForInput):
                        sid = running.pop(task)
                        self.waiting.add(sid)
                        waits[sid] = paused.requests
                for task in sorted((t for t in finished if t in running),
                                   key=lambda t: t.result()[1]):
                    sid = running.pop(task)
                    result, seq = task.result()
                    self._completed(sid, result, seq)
            if waits:
                raise WaitingForInput([r for requests in waits.values() for r in requests])
            self._skip_rest()
        finally:
            for task in running:
                task.cancel()
            if running:
                await asyncio.gather(*running, return_exceptions=True)

    async def _wait_or_answer(self, running: dict[asyncio.Task[Any], str],
                              waits: dict[str, list[dict[str, Any]]]
                              ) -> set[asyncio.Task[Any]]:
        """Wait for a running step to finish or for an answer to a waiting one (lwtool.
        runtime.answers); the finished tasks. An answered step waits no more: it is
        runnable again at the same visit, the journal holding its answer."""
        from lwtool.runtime.answers import answers_of, paths_of

        run_id = self.run.run_id
        answered = answers_of(self.run).given(paths_of(
            (r for requests in waits.values() for r in requests), run_id))
        try:
            finished, _ = await asyncio.wait([*running, answered],
                                             return_when=asyncio.FIRST_COMPLETED)
        finally:
            answered.cancel()
        answers = self.run.journal.answers.keys()
        for sid, requests in list(waits.items()):
            if paths_of(requests, run_id) & answers:
                del waits[sid]
                self.waiting.discard(sid)
                self.visits[sid] -= 1
                self.dirty.add(sid)
        return {task for task in finished if task is not answered}  # type: ignore[misc]

    def _start_visit(self, sid: str) -> tuple[str, int]:
        """Count a new visit of `sid`; its step path and visit number."""
        visit = self.visits[sid]
        limit = int(self.steps[sid].get("maxVisits", 1))
        path = self.path_of(sid, visit)
        # A decision is bounded by the loop's other steps, not by its own maxVisits (the
        # spec: it "does not use maxVisits meaningfully").
        if visit >= limit and self.steps[sid].get("uses") != "decision":
            raise StepFailure("max_visits_exceeded", f"step '{sid}' would start visit "
                              f"{visit + 1} of at most {limit}", path)
        self.visits[sid] = visit + 1
        return path, visit

    def executed(self, sid: str) -> None:
        """`sid` finished executing; its commit is next. When nothing else in the scope
        can run any more (every other step done or skipped, and this one neither a
        decision nor needed by anyone), tell the owner: a parallel branch frees its
        concurrency slot for the next branch while this last commit completes."""
        if self.on_last_execution is None:
            return
        step = self.steps[sid]
        if step.get("uses") == "decision" or self.dependents[sid]:
            return
        if all(s == sid or s in self.done or s in self.skipped for s in self.order):
            self.on_last_execution()

    def _completed(self, sid: str, result: Any, seq: int) -> None:
        """Apply a committed result. `seq` is its commit position in the run's log, so a
        replay (where recorded results come back all at once) orders "the most recently
        committed step" exactly as the first run did."""
        step = self.steps[sid]
        self.done.add(sid)
        self.dirty.update(self.dependents[sid])
        if step.get("uses") != "decision":
            self.outputs[sid].append(result)
            if seq >= self.last_seq:
                self.last_step, self.last_seq = sid, seq
            return
        chosen = result
        self.dirty.update(self.loop_waiters.get(sid, ()))
        for target in decision_targets(step):
            if target in self.gated and target != chosen and target not in self.released:
                self.rejected.add(target)
        if chosen == END:
            self.ended = True
        elif chosen in self.done or (chosen in self.steps and sid in self.downstream(chosen)):
            # A back-edge: the target and everything after it in the loop go round again.
            for again in self.downstream(chosen):
                self.done.discard(again)
            self.dirty.update(self.downstream(chosen))
        else:
            # A forward target, possibly one an earlier round chose against: it and the
            # steps after it become runnable again.
            self.released.add(chosen)
            self.rejected.discard(chosen)
            self.dirty.update(self.downstream(chosen))
        self.skipped = {gone for target in self.rejected for gone in self.downstream(target)
                        if gone not in self.done}

    def _skip_rest(self) -> None:
        """Record every step that did not run in this scope as skipped."""
        events = []
        for sid in self.order:
            if self.visits[sid] == 0:
                path = self.path_of(sid, 0)
                if path not in self.run.journal.skipped:
                    events.append(NewEvent("StepSkipped", {"stepId": sid}, path))
        if events:
            self.run.note(events)

"""Live progress of `lwtool run` and `replay` on a terminal's stderr (rich): steps done of
known, the steps running now, the branches of parallel groups, tokens and cost so far.

The progress reads only committed events: the world is wrapped (`Observed`) so that each
commit hands its events over. The committer thread only queues them; the display's own
refresh thread folds them into a Timeline, so a run never waits for its progress.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, TextIO

from lwtool.observe.terminal import safe_text
from lwtool.observe.timeline import Timeline, top_step_ids
from lwtool.world.base import WorldError

MAX_RUNNING_SHOWN = 6


class Observed:
    """A world that hands every committed event to `listener(run_id, events)`; every
    other attribute is the wrapped world's."""

    def __init__(self, world: Any, listener: Any) -> None:
        self._world = world
        self._listener = listener

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)

    def create_run(self, run_id: str, *args: Any, **kwargs: Any) -> Any:
        committed = self._world.create_run(run_id, *args, **kwargs)
        self._listener(run_id, committed)
        return committed

    def append(self, run_id: str, *args: Any, **kwargs: Any) -> Any:
        committed = self._world.append(run_id, *args, **kwargs)
        self._listener(run_id, committed)
        return committed


class Progress:
    """The runs seen so far and what the display shows of them."""

    def __init__(self, world: Any) -> None:
        self._world = world
        self._lock = threading.Lock()
        self._pending: list[tuple[str, Sequence[Any]]] = []
        self._timelines: dict[str, Timeline] = {}
        self._top_steps: dict[str, list[str]] = {}
        self._began = time.monotonic()

    def listen(self, run_id: str, events: Sequence[Any]) -> None:
        with self._lock:
            self._pending.append((run_id, events))

    def _fold(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for run_id, events in pending:
            timeline = self._timelines.get(run_id)
            if timeline is None:  # first sight (a replay): what was committed before too
                try:
                    timeline = Timeline.of(run_id, self._world.events(run_id))
                except WorldError:  # no such run (yet): the command itself says so
                    continue
                self._timelines[run_id] = timeline
            timeline.feed(list(events))

    def settled(self) -> bool:
        """Whether every run seen has ended."""
        return bool(self._timelines) and all(t.status != "running"
                                             for t in self._timelines.values())

    def lines(self) -> list[str]:
        """The display as plain lines (the newest run first)."""
        self._fold()
        out: list[str] = []
        for timeline in reversed(list(self._timelines.values())):
            out.extend(safe_text(line) for line in self._run_lines(timeline))
        return out or [f"starting · {time.monotonic() - self._began:.1f}s"]

    def _run_lines(self, timeline: Timeline) -> list[str]:
        done, known = self._counts(timeline)
        now = time.time()
        head = f"run {timeline.run_id} · {timeline.status} · {done} of {known} steps done"
        lines = [f"{head} · {_seconds(timeline.elapsed(now))}"]
        running = [a for a in timeline.running() if a.uses != "parallel"]
        for attempt in running[:MAX_RUNNING_SHOWN]:
            retry = f" (attempt {attempt.attempt})" if attempt.attempt > 1 else ""
            held = f" · waiting for a model slot ({attempt.waiting})" if attempt.waiting \
                else ""
            lines.append(f"  running {attempt.path} · {attempt.uses}{retry}{held} · "
                         f"{_seconds(max(0.0, now - attempt.started))}")
        if len(running) > MAX_RUNNING_SHOWN:
            lines.append(f"  … and {len(running) - MAX_RUNNING_SHOWN} more running")
        for path, prompt in timeline.asks.items():  # answerable while the run goes on
            lines.append(f"  waits for an answer at {path}: {prompt} · lwtool respond "
                         f"{timeline.run_id} {path} --input FILE")
        for group, states in timeline.branches().items():
            tally = {s: sum(1 for v in states.values() if v == s)
                     for s in ("done", "running", "failed")}
            lines.append(f"  {group}: branches {tally['done']} done · {tally['running']} "
                         f"running · {tally['failed']} failed")
        usage = timeline.usage
        if timeline.priced_calls or timeline.unpriced_calls:
            cost = "unpriced" if timeline.cost_usd is None else f"${timeline.cost_usd:.6f}"
            lines.append(f"  tokens {usage['inputTokens']} in · {usage['outputTokens']} out"
                         f" · cost {cost}")
        return lines

    def _counts(self, timeline: Timeline) -> tuple[int, int]:
        top = self._top_steps.get(timeline.version_id)
        if top is None:
            top = top_step_ids(self._world.get_version(timeline.version_id) or {})
            self._top_steps[timeline.version_id] = top
        return timeline.counts(top)


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 60 else f"{int(value // 60)}m{int(value % 60):02d}s"


def watch(world: Any, stream: TextIO, enabled: bool, run_id: str | None = None
          ) -> tuple[Any, AbstractContextManager[Any]]:
    """The world to run with and the display to run inside: observed and shown on
    `stream` when `enabled` and `stream` is a terminal; else the world itself and
    nothing shown. `run_id` (a replay) is shown from its committed events at once."""
    if not enabled or not stream.isatty():
        return world, nullcontext()
    progress = Progress(world)
    if run_id is not None:
        progress.listen(run_id, ())
    return Observed(world, progress.listen), _shown(progress, stream)


@contextmanager
def _shown(progress: Progress, stream: TextIO) -> Iterator[None]:
    from rich.console import Console, Group
    from rich.live import Live
    from rich.spinner import Spinner
    from rich.text import Text

    class _View:
        def __rich__(self) -> Group:
            first, *rest = progress.lines()
            head: Any = Text(first) if progress.settled() else Spinner("dots", Text(first))
            return Group(head, *(Text(line) for line in rest))

    with Live(_View(), console=Console(file=stream, stderr=True), refresh_per_second=8):
        yield

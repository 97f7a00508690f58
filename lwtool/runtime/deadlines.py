"""Step attempt deadlines of one run on one loop timer.

`asyncio.timeout` arms a loop timer for each attempt and cancels it after (about 6 us a
step here, as much as evaluating the step's input). A run's attempts share one timer
instead: armed for the earliest open deadline, moved only when an earlier one opens,
and looked at again when it fires. In a chain every deadline is later than the one
armed, so a step costs one set insert and one removal.

An attempt past its deadline is cancelled, and its `with` raises TimeoutError in
its place, exactly as `asyncio.timeout` does (a cancellation from elsewhere passes
through unchanged).
"""

from __future__ import annotations

import asyncio
import math
from types import TracebackType


class Deadlines:
    """The open deadlines of one run's attempts (one event loop)."""

    def __init__(self) -> None:
        self._open: set[Deadline] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = math.inf

    def within(self, seconds: float) -> Deadline:
        """`with deadlines.within(s):` inside a task raises TimeoutError after `s`
        seconds."""
        return Deadline(self, seconds)

    def close(self) -> None:
        """Drop the timer (the run ended; one left behind by an interrupted run fires
        once, finds nothing open and is not armed again)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._armed_for = None, math.inf

    def _open_one(self, deadline: Deadline, loop: asyncio.AbstractEventLoop) -> None:
        self._open.add(deadline)
        if deadline.when < self._armed_for:
            self._arm(deadline.when, loop)

    def _arm(self, when: float, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._fire, loop)
        self._armed_for = when

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer, self._armed_for = None, math.inf
        now = loop.time()
        for deadline in [d for d in self._open if d.when <= now]:
            self._open.discard(deadline)
            deadline.expire()
        if self._open:
            self._arm(min(d.when for d in self._open), loop)


class Deadline:
    """One attempt's deadline: a context manager around the attempt."""

    __slots__ = ("_owner", "_seconds", "when", "_task", "_cancelling", "_expired")

    def __init__(self, owner: Deadlines, seconds: float) -> None:
        self._owner, self._seconds = owner, seconds
        self.when = math.inf
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    def __enter__(self) -> Deadline:
        """A plain `with` (inside a task): entering and leaving await nothing, so no
        coroutine is made for them."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline must be used inside a task")
        loop = asyncio.get_running_loop()
        self._task, self._cancelling = task, task.cancelling()
        self.when = loop.time() + self._seconds
        self._owner._open_one(self, loop)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._owner._open.discard(self)
        if self._expired and self._task is not None:
            if self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
                raise TimeoutError from exc

    def expire(self) -> None:
        self._expired = True
        if self._task is not None:
            self._task.cancel()

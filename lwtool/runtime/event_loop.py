"""The event loop lwtool runs workflows on where it makes the loop itself (`lwtool run`,
`replay`, `worker` and a worker's own loops): asyncio's, with timers kept to the
microsecond instead of the millisecond.

asyncio's epoll selector rounds every timeout up to a whole millisecond (epoll_wait
takes milliseconds), so a timer due 0.2 ms after the loop went to sleep fires 1 ms
later. In a run whose steps wait on timers (a tool's sleep, a retry's backoff, a rate
limit, a deadline) and end a fraction of a millisecond apart, that is most of a
millisecond lost a wait: 100 branches of a 20 ms tool, 10 at a time, took 1.08x the
ideal 200 ms with it and 1.05x without (docs/performance.md). Here a wait with a
timeout first waits on the epoll descriptor itself with `select()`, which takes
microseconds, then collects the events without waiting.

For the Python API: `asyncio.Runner(loop_factory=lwtool.new_event_loop)` (Python 3.12:
`asyncio.run(main(), loop_factory=lwtool.new_event_loop)`); any loop runs lwtool.
"""

from __future__ import annotations

import asyncio
import select
import selectors
import signal
import sys
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

# select() takes descriptors below FD_SETSIZE only (1024 on Linux): an epoll
# descriptor at or above it (a process with that many files open when the loop was
# made) waits as asyncio's own selector does.
FD_SETSIZE = 1024


if sys.platform == "linux":
    class PreciseEpollSelector(selectors.EpollSelector):
        """An epoll selector whose timed waits end within the kernel's timer slack of
        their timeout (~50 us) instead of up to a millisecond after it."""

        def __init__(self) -> None:
            super().__init__()
            self._precise = self.fileno() < FD_SETSIZE

        def select(self, timeout: float | None = None
                   ) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is not None and timeout > 0 and self._precise:
                # A signal ends the wait too: asyncio's wakeup descriptor is in the set.
                select.select([self.fileno()], [], [], timeout)
                timeout = 0
            return super().select(timeout)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop with microsecond timers on Linux (epoll); elsewhere asyncio's
    default loop (kqueue's timeouts are not rounded)."""
    if sys.platform == "linux":
        # Ctrl-C (SIGINT) is held while the loop is made: a KeyboardInterrupt inside its
        # __init__ left a half-made loop whose __del__ printed a traceback (no _ssock);
        # held, it is raised once the loop is whole (and can be closed).
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return asyncio.SelectorEventLoop(PreciseEpollSelector())
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on `new_event_loop()` (Ctrl-C handled as asyncio.run does)."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)

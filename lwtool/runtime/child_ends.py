"""A worker's ears for its runs' children: a parent waiting for a child run (a
workflow.invoke child, a map shard or reduce node) that another claim executes is woken
when that child's claim ends, by the NOTIFY that ends it (RUN_ENDS_CHANNEL, payload: the
run id), instead of looking at the child's record on a timer.

One thread a worker listens, started at the first wait and kept until the worker stops;
each waiter is an asyncio.Event on its own run's loop (a worker's runs each have a loop
and thread of their own), set from the listening thread. A notification missed (the
listener not yet listening, the server lost) costs a look after FALLBACK seconds, never
a lost end: the waiter reads the child's record either way."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from lwtool.runtime.own_loop import soon

FALLBACK = 1.0  # seconds between looks at a child's record when no end was heard
RELISTEN = 1.0  # seconds before listening again after the server was lost


class RunEnds:
    """Waiters for ends of runs in the PostgreSQL world at `url`."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._waiters: dict[str, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def waiting(self, run_id: str) -> Iterator[asyncio.Event]:
        """An event set each time `run_id`'s claim ends, while the block runs (clear it
        before each look at the run's record, so an end after the look wakes the next
        wait)."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            self._waiters.setdefault(run_id, []).append(entry)
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(target=self._listen, daemon=True,
                                                name="lwtool run ends")
                self._thread.start()
        try:
            yield entry[1]
        finally:
            with self._lock:
                entries = self._waiters.get(run_id, [])
                if entry in entries:
                    entries.remove(entry)
                if not entries:
                    self._waiters.pop(run_id, None)

    def stop(self) -> None:
        self._stopped.set()

    def _heard(self, run_id: str) -> None:
        with self._lock:
            entries = list(self._waiters.get(run_id, ()))
        for loop, event in entries:
            soon(loop, event.set)

    def _listen(self) -> None:
        from lwtool.world.postgres_queue import RUN_ENDS_CHANNEL, listen

        while not self._stopped.is_set():
            listen(self.url, RUN_ENDS_CHANNEL, self._stopped.is_set, self._heard)
            self._stopped.wait(RELISTEN)


async def heard_or_after(event: asyncio.Event, seconds: float) -> None:
    """Return once `event` is set, or after `seconds`."""
    try:
        await asyncio.wait_for(event.wait(), max(0.0, seconds))
    except TimeoutError:
        pass

"""The thread pools of a run's state (its commit thread, its sync tools' threads), kept
between the runs of one process: a worker's next run, or a branch executed from the log,
takes idle ones instead of starting threads again. A pool goes back only when nothing
it was given still runs (a sync tool that outlives its cancelled step keeps its pool out
of use: it is shut down instead, as before)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

SPARE_MOST = 16  # idle pools of one size and name kept at most


class RunPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor that counts the calls it was given and has not finished."""

    def __init__(self, size: int, name: str) -> None:
        super().__init__(size, thread_name_prefix=name)
        self.kind = (size, name)
        self._busy = 0
        self._busy_guard = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._busy_guard:
            self._busy += 1
        try:
            future = super().submit(fn, *args, **kwargs)
        except BaseException:
            self._finished(None)
            raise
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _: Any) -> None:
        with self._busy_guard:
            self._busy -= 1

    @property
    def idle(self) -> bool:
        return self._busy == 0


_spare: dict[tuple[int, str], list[RunPool]] = {}
_guard = threading.Lock()


def take(size: int, name: str) -> RunPool:
    """An idle pool of `size` threads named `name`, kept from an earlier run, or a new
    one."""
    with _guard:
        spare = _spare.get((size, name))
        if spare:
            return spare.pop()
    return RunPool(size, name)


def give_back(pool: RunPool, drain: bool = False) -> None:
    """Keep `pool` for the next run once what it was given has finished (`drain`: wait
    for that; else a pool still busy is shut down, its queued calls cancelled)."""
    if drain and not pool.idle:
        try:  # one thread, first in first out: done once every earlier call is
            pool.submit(_nothing).result()
        except RuntimeError:  # the interpreter is exiting
            pool.shutdown(wait=True)
            return
    if pool.idle:
        with _guard:
            spare = _spare.setdefault(pool.kind, [])
            if len(spare) < SPARE_MOST:
                spare.append(pool)
                return
    pool.shutdown(wait=drain, cancel_futures=not drain)


def _nothing() -> None:
    return None


def release_spares() -> None:
    """Shut the idle pools kept down, their threads ended (a command that ends: nothing
    would use them, and a live thread would keep the interpreter from exiting)."""
    with _guard:
        pools = [pool for spare in _spare.values() for pool in spare]
        _spare.clear()
    for pool in pools:
        pool.shutdown(wait=True)

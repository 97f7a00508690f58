"""The ends of branches a worker executed for other workers' runs, written with its next
branch claim (BranchQueue.end_and_claim): one statement ends a helper's branch and
claims its next, where each took a round trip of its own. A branch executed hands its
end here and awaits whether it was written (False: its lease was lost to another
worker); the worker's claim loop, woken at once, takes every end waiting and writes
them with its claim, or alone when it claims no branch. An end is not flushed either
way: one a crash loses leaves the branch claimed, and its next claim replays it from the
run's log, where its steps are durable already."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lwtool.world.base import WorldError

Waiting = tuple[Any, str, Any, "asyncio.Future[bool]"]  # task, state, result, written?


class HelperEnds:
    """`wake`: wakes the worker's claim loop (from its own loop)."""

    def __init__(self, wake: Callable[[], None]) -> None:
        self.wake = wake
        self._waiting: list[Waiting] = []

    def __bool__(self) -> bool:
        return bool(self._waiting)

    def add(self, task: Any, state: str, result: Any) -> asyncio.Future[bool]:
        """Hand a branch's end (on the worker's loop); the future says whether it was
        written (raises the world's error when it could not be)."""
        written: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((task, state, result, written))
        self.wake()
        return written

    async def write(self, queue: Any, worker: str, lease: float) -> None:
        """The ends waiting, written alone (no claim to ride with)."""
        taken = self.take()
        if not taken:
            return
        try:
            written = (await asyncio.to_thread(queue.end_and_claim, self.ends(taken),
                                               worker, lease, most=0))[1]
        except WorldError as exc:
            self.fail(taken, exc)
            return
        self.settle(taken, written)

    def take(self) -> list[Waiting]:
        taken, self._waiting = self._waiting, []
        return taken

    @staticmethod
    def ends(taken: list[Waiting]) -> list[tuple[Any, str, Any]]:
        return [(task, state, result) for task, state, result, _ in taken]

    @staticmethod
    def settle(taken: list[Waiting], written: set[tuple[str, str]]) -> None:
        for task, _, _, future in taken:
            if not future.done():
                future.set_result((task.run_id, task.prefix) in written)

    @staticmethod
    def fail(taken: list[Waiting], error: BaseException) -> None:
        for _, _, _, future in taken:
            if not future.done():
                future.set_exception(error)

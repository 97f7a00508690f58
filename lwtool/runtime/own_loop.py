"""Run a coroutine on an event loop of its own, in a thread of its own, and await it from
another loop (`lwtool worker`: each claimed run or branch executes this way). The loops
and their threads are kept and used again, one coroutine at a time each: a branch does
not pay for a new thread, loop and executor.

Nothing one run does on its loop (its start's and resume's world calls, a long log read
and verified, a commit's round trips, a tool that holds its loop) holds up the worker's
other runs, its branches or its claiming; and a run alone on its loop commits inline
instead of through its commit thread (`RunState.inline_commits`: a new thread starts
with the default `LOOP_SHARED`, False). Cancelling the awaiting task cancels the
coroutine on its own loop and waits for it to unwind, so a lease lost stops the run
there as it did on the shared loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from lwtool.runtime import event_loop

T = TypeVar("T")


def soon(loop: asyncio.AbstractEventLoop, call: Callable[[], None]) -> None:
    """`call` on `loop`, from any thread."""
    try:
        loop.call_soon_threadsafe(call)
    except RuntimeError:  # the loop is closed: nobody to tell
        pass


IDLE_MOST = 32  # idle loop threads kept for the next run or branch at most


class _LoopThread:
    """An event loop running in a thread of its own, kept between uses: a worker's runs
    and branches reuse it instead of making a thread and a loop each (one at a time)."""

    def __init__(self) -> None:
        self.loop = event_loop.new_event_loop()
        self.thread = threading.Thread(target=self._serve, daemon=True, name="lwtool loop")
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                self.loop.run_forever()
                return  # stopped (close)
            except BaseException:  # noqa: BLE001 - a task's KeyboardInterrupt or SystemExit
                continue  # reaches the awaiting loop through its task's done callback

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


_idle: list[_LoopThread] = []
_guard = threading.Lock()


def _take() -> _LoopThread:
    with _guard:
        if _idle:
            return _idle.pop()
    return _LoopThread()


def _give_back(used: _LoopThread, clean: bool) -> None:
    """Keep a loop its coroutine left clean for the next one; close any other."""
    with _guard:
        if clean and len(_idle) < IDLE_MOST:
            _idle.append(used)
            return
    threading.Thread(target=used.close, daemon=True).start()


async def _alone(main: Coroutine[Any, Any, T]) -> T:
    """`main` to its end, then whatever it left running on the loop cancelled and
    unwound (as asyncio.Runner does when it closes its loop)."""
    try:
        return await main
    finally:
        this = asyncio.current_task()
        left = [task for task in asyncio.all_tasks() if task is not this]
        for task in left:
            task.cancel()
        if left:
            await asyncio.gather(*left, return_exceptions=True)


async def on_own_loop(make: Callable[[], Coroutine[Any, Any, T]], name: str) -> T:
    """`make()` run to its end on an event loop of its own, in a thread of its own named
    `name` meanwhile (kept for the next use); its result, or its exception raised
    here."""
    home = asyncio.get_running_loop()
    ended: asyncio.Future[T] = home.create_future()
    inner: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]] = []
    cancel_asked = threading.Event()
    used = _take()

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        threading.current_thread().name = name
        inner.append((asyncio.get_running_loop(), task))
        if cancel_asked.is_set():  # cancelled before it started: never made
            raise asyncio.CancelledError
        return await make()

    def settle(outcome: Callable[[], object]) -> None:
        if not ended.done():
            outcome()

    def hand_back(outcome: Callable[[], object]) -> None:
        try:
            home.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the awaiting loop is closed: nobody waits any more
            pass

    def finished(task: asyncio.Task[T]) -> None:
        threading.current_thread().name = "lwtool loop"
        failure = None if task.cancelled() else task.exception()
        # kept before the awaiting side hears of the end, so its next use finds it; a
        # loop interrupted (KeyboardInterrupt, SystemExit) is not used again
        _give_back(used, not isinstance(failure, (KeyboardInterrupt, SystemExit)))
        if task.cancelled():
            hand_back(ended.cancel)
        elif failure is not None:
            hand_back(lambda: ended.set_exception(failure))
        else:
            result = task.result()
            hand_back(lambda: ended.set_result(result))

    def start() -> None:  # in an empty context: nothing of the caller's loop carries over
        used.loop.create_task(_alone(main())).add_done_callback(finished)

    used.loop.call_soon_threadsafe(start, context=contextvars.Context())
    try:
        return await asyncio.shield(ended)
    except asyncio.CancelledError:
        cancel_asked.set()
        if inner:
            loop, task = inner[0]
            loop.call_soon_threadsafe(task.cancel)
        try:  # the coroutine unwinds on its loop (its state closed) before this ends
            await ended
        except BaseException:  # noqa: BLE001 - cancelled is what is raised below
            pass
        raise

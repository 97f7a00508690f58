"""Run a coroutine on an event loop of its own, in a thread of its own, and await it from
another loop (`lwtool worker`: each claimed run or branch executes this way).

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
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from lwtool.runtime import event_loop

T = TypeVar("T")


async def on_own_loop(make: Callable[[], Coroutine[Any, Any, T]], name: str) -> T:
    """`make()` run to its end by `event_loop.run` in a new thread named `name`; its result,
    or its exception raised here."""
    home = asyncio.get_running_loop()
    ended: asyncio.Future[T] = home.create_future()
    inner: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[T]]] = []
    cancel_asked = threading.Event()

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
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

    def target() -> None:
        try:
            result = event_loop.run(main())
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting loop as is
            failure = exc
            hand_back(ended.cancel if isinstance(failure, asyncio.CancelledError)
                      else lambda: ended.set_exception(failure))
            return
        hand_back(lambda: ended.set_result(result))

    threading.Thread(target=target, name=name, daemon=True).start()
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

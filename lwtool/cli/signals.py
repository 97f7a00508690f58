"""Ctrl-C and SIGTERM for the CLI: at once outside a run, gracefully during one.

Outside a run (start-up, validate, check, ...), `quit_at_once` writes one line and ends
the process (130 / 143): nothing is in flight that a clean unwind would save, and a
KeyboardInterrupt raised at a random point can be swallowed by Python (in a callback).
While a run executes, `graceful` lets asyncio cancel the run's task at an await point
(Ctrl-C through asyncio.run's own handler, SIGTERM through the loop's), so nothing more
is committed and the caller prints which run to resume.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

T = TypeVar("T")
# No asyncio import at module level: lwtool.cli.entry loads this first thing.
_WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Terminated(KeyboardInterrupt):
    """SIGTERM during a run, handled like Ctrl-C: unwound, nothing more committed."""


def quit_at_once(signum: int, frame: FrameType | None) -> None:
    os.write(2, f"lwtool: {_WORDS.get(signal.Signals(signum), 'stopped')}\n".encode())
    os._exit(128 + signum)


@contextmanager
def graceful() -> Iterator[None]:
    """While a run executes: Ctrl-C raises KeyboardInterrupt through asyncio.run (which
    installs its cancelling handler only over the default one); SIGTERM is left to
    `cancel_on_sigterm`. The at-once handlers come back afterwards."""
    saved = signal.getsignal(signal.SIGINT)
    if saved is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if saved is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, saved)


async def cancel_on_sigterm(start: Callable[[], Awaitable[T]]) -> T:
    """Await `start()`; SIGTERM cancels it at an await point and raises Terminated."""
    import asyncio  # here: this module is loaded first thing, before any heavy import

    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        return await start()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    hit: list[bool] = []

    def on_sigterm() -> None:
        hit.append(True)
        task.cancel()

    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        return await start()
    except asyncio.CancelledError:
        if hit:
            raise Terminated() from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, quit_at_once)

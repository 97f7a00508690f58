"""lwtool.runtime.own_loop: a coroutine on a loop and thread of its own, awaited from
another loop: its result and errors come back, a loop it holds up holds up nothing
else, and cancelling the awaiting task unwinds it there before the wait ends."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from lwtool.record.errors import StepFailure
from lwtool.record.run_state import LOOP_SHARED
from lwtool.runtime.own_loop import on_own_loop


def test_the_result_comes_back_from_another_thread_and_loop() -> None:
    outer: list[object] = []

    async def inner() -> tuple[str, bool, bool]:
        await asyncio.sleep(0)
        return (threading.current_thread().name,
                asyncio.get_running_loop() is outer[0], LOOP_SHARED.get())

    async def main() -> tuple[str, bool, bool]:
        outer.append(asyncio.get_running_loop())
        LOOP_SHARED.set(True)  # as `lwtool worker` sets it on its own loop
        return await on_own_loop(inner, "lwtool test")

    # a loop of its own: not shared, so a run there commits inline
    assert asyncio.run(main()) == ("lwtool test", False, False)


def test_an_error_is_raised_to_the_awaiting_task() -> None:
    async def inner() -> None:
        raise StepFailure("step_failed", "no", "s")

    with pytest.raises(StepFailure, match="no"):
        asyncio.run(on_own_loop(inner, "lwtool test"))


def test_a_held_loop_holds_up_nothing_else() -> None:
    async def held() -> str:
        time.sleep(0.5)  # blocks its own loop only
        return "held"

    async def main() -> tuple[str, int]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        result = await on_own_loop(held, "lwtool test")
        ticker.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result == "held" and ticks >= 20


def test_cancelling_the_wait_unwinds_the_coroutine_first() -> None:
    events: list[str] = []
    started = threading.Event()

    async def inner() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # its clean-up still runs on its own loop
            events.append("unwound")
            raise

    async def main() -> None:
        waiting = asyncio.create_task(on_own_loop(inner, "lwtool test"))
        while not started.is_set():
            await asyncio.sleep(0.005)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        events.append("wait ended")

    started_at = time.monotonic()
    asyncio.run(main())
    assert events == ["unwound", "wait ended"] and time.monotonic() - started_at < 10


def test_a_wait_cancelled_as_it_begins_ends_at_once() -> None:
    """Cancelled before or just after the coroutine started on its loop: either way it
    is cancelled there (never left to run its 30 s)."""

    async def inner() -> None:
        await asyncio.sleep(30)

    async def main() -> None:
        waiting = asyncio.create_task(on_own_loop(inner, "lwtool test"))
        await asyncio.sleep(0)  # the thread may or may not have started it yet
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    started_at = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started_at < 10


def test_model_calls_go_to_the_call_loop_and_are_cancelled_there() -> None:
    """`lwtool worker` makes every run's provider calls on its own loop
    (lwtool.calls.models.call_models_on): a call awaited from a run's loop runs there,
    and a step's deadline cancelling the wait cancels the call on that loop."""
    from lwtool.calls import models

    where: list[str] = []
    cancelled = threading.Event()

    async def provider_call(seconds: float) -> str:
        where.append(threading.current_thread().name)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "reply"

    async def run_on_its_loop() -> tuple[str, bool]:
        reply = await models._on_call_loop(lambda: provider_call(0))
        try:
            async with asyncio.timeout(0.1):  # the step's deadline
                await models._on_call_loop(lambda: provider_call(30))
        except TimeoutError:
            return reply, True
        return reply, False

    async def worker() -> tuple[str, bool]:
        models.call_models_on(asyncio.get_running_loop())
        try:
            return await on_own_loop(run_on_its_loop, "lwtool run")
        finally:
            models.call_models_on(None)

    assert asyncio.run(worker()) == ("reply", True)
    assert where == ["MainThread", "MainThread"] and cancelled.wait(5)


def test_loops_are_used_again_and_an_exit_from_a_task_comes_back() -> None:
    """A loop and thread serve one coroutine after another (no new thread a branch);
    a SystemExit out of one is raised to the awaiting task (nothing hangs), and what a
    coroutine left running is cancelled before the next one starts."""
    left: list[asyncio.Task[None]] = []

    async def which() -> int:
        left.append(asyncio.create_task(asyncio.sleep(30)))  # left behind
        return threading.get_ident()

    async def leaves() -> None:
        raise SystemExit(3)

    async def main() -> tuple[int, int, int]:
        first = await on_own_loop(which, "lwtool test")
        second = await on_own_loop(which, "lwtool test")
        with pytest.raises(SystemExit):
            await on_own_loop(leaves, "lwtool test")
        third = await on_own_loop(which, "lwtool test")
        return first, second, third

    first, second, _ = asyncio.run(main())
    assert first == second
    assert all(task.cancelled() for task in left[:2])

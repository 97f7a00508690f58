"""Step attempt deadlines on one timer (lwtool.runtime.deadlines): they time out as
asyncio.timeout does, however they are opened and closed."""

from __future__ import annotations

import asyncio
import time

import pytest

from lwtool.runtime.deadlines import Deadlines


async def _sleep_within(deadlines: Deadlines, limit: float, sleep: float) -> str:
    try:
        with deadlines.within(limit):
            await asyncio.sleep(sleep)
    except TimeoutError:
        return "timeout"
    return "done"


def test_an_attempt_past_its_deadline_times_out_and_the_others_finish() -> None:
    async def main() -> list[str]:
        deadlines = Deadlines()
        # A late deadline first: the timer must move to the earlier ones after it.
        return await asyncio.gather(_sleep_within(deadlines, 5, 0.05),
                                    _sleep_within(deadlines, 0.02, 1),
                                    _sleep_within(deadlines, 0.2, 0.01),
                                    _sleep_within(deadlines, 0.05, 1))

    started = time.monotonic()
    assert asyncio.run(main()) == ["done", "timeout", "done", "timeout"]
    assert time.monotonic() - started < 0.5


def test_a_chain_of_attempts_reuses_the_timer_and_the_last_one_still_times_out() -> None:
    async def main() -> list[str]:
        deadlines = Deadlines()
        done = [await _sleep_within(deadlines, 0.5, 0) for _ in range(100)]
        armed = deadlines._timer
        done.append(await _sleep_within(deadlines, 0.03, 1))
        assert armed is not None and armed.cancelled()  # an earlier deadline moved it
        return done

    assert asyncio.run(main()) == ["done"] * 100 + ["timeout"]


def test_a_cancellation_from_elsewhere_passes_through_as_cancellation() -> None:
    async def main() -> None:
        deadlines = Deadlines()
        task = asyncio.create_task(_sleep_within(deadlines, 5, 5))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not deadlines._open

    asyncio.run(main())


def test_close_drops_the_timer() -> None:
    async def main() -> None:
        deadlines = Deadlines()
        assert await _sleep_within(deadlines, 5, 0) == "done"
        timer = deadlines._timer
        deadlines.close()
        assert timer is not None and timer.cancelled() and deadlines._timer is None

    asyncio.run(main())


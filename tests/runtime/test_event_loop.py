"""lwtool.runtime.event_loop: the loop `lwtool run`, `replay` and `worker` make keeps
timers to well under a millisecond (asyncio's epoll selector rounds each timed wait up
to a whole one), and I/O, other threads and signals still wake it at once."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from lwtool.runtime import event_loop
from tests.runtime.cli_runs import lwtool

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="epoll is Linux's")

SHORT = 0.0002  # a timer due well within a millisecond


async def shortest_sleep(times: int = 30) -> float:
    """The shortest of `times` sleeps of SHORT seconds, in seconds. On asyncio's default
    loop none ends before 1 ms: its epoll wait rounds the 0.2 ms up."""
    taken = []
    for _ in range(times):
        started = time.perf_counter()
        await asyncio.sleep(SHORT)
        taken.append(time.perf_counter() - started)
    return min(taken)


def test_a_timer_due_within_a_millisecond_fires_within_one() -> None:
    assert event_loop.run(shortest_sleep()) < 0.0009


def test_the_loop_is_asyncios_own_with_another_selector() -> None:
    loop = event_loop.new_event_loop()
    try:
        assert isinstance(loop, asyncio.SelectorEventLoop)
        assert isinstance(loop._selector, event_loop.PreciseEpollSelector)  # type: ignore[attr-defined]
    finally:
        loop.close()


def test_a_thread_and_a_signal_wake_a_loop_waiting_on_a_long_timer() -> None:
    async def main() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        signalled = asyncio.Event()
        loop.add_signal_handler(signal.SIGUSR1, signalled.set)
        far = loop.call_later(30, lambda: None)  # the loop's next timer, far away
        started = time.perf_counter()
        threading.Timer(0.05, lambda: loop.call_soon_threadsafe(woken.set)).start()
        await woken.wait()
        by_thread = time.perf_counter() - started
        started = time.perf_counter()
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        await signalled.wait()
        by_signal = time.perf_counter() - started
        far.cancel()
        loop.remove_signal_handler(signal.SIGUSR1)
        return by_thread, by_signal

    by_thread, by_signal = event_loop.run(main())
    assert by_thread < 5 and by_signal < 5


def test_a_high_epoll_descriptor_waits_as_asyncio_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """select() cannot take a descriptor at or above FD_SETSIZE: such a loop never calls
    it and still runs (its timers rounded as asyncio's are)."""
    monkeypatch.setattr(event_loop, "FD_SETSIZE", 0)

    def refused(*args: object) -> object:
        raise ValueError("filedescriptor out of range in select()")

    monkeypatch.setattr(select, "select", refused)
    assert event_loop.run(shortest_sleep(3)) >= 0.0009


def test_lwtool_run_executes_on_it(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(
        "import asyncio, time\n\n"
        "async def ticks(args):\n"
        "    taken = []\n"
        "    for _ in range(30):\n"
        "        started = time.perf_counter()\n"
        f"        await asyncio.sleep({SHORT})\n"
        "        taken.append(time.perf_counter() - started)\n"
        "    return {'shortestUs': int(min(taken) * 1e6)}\n\n"
        "tools = {'ticks': ticks}\n")
    (tmp_path / "flow.lwir.json").write_text(json.dumps({
        "apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "ticks"}, "permissions": {"tools": ["ticks"]},
        "steps": [{"id": "t", "uses": "tool.call", "with": {"tool": "ticks"}}]}))
    (tmp_path / "input.json").write_text("{}")
    done = lwtool(tmp_path, "run", "flow.lwir.json", "--input", "input.json",
                  "--tools", "tools.py:tools", "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["shortestUs"] < 900


def test_a_workers_run_on_a_loop_of_its_own_keeps_its_timers_too() -> None:
    """`lwtool worker` executes each run it claims on a loop of its own (own_loop)."""
    from lwtool.runtime.own_loop import on_own_loop

    assert asyncio.run(on_own_loop(shortest_sleep, "lwtool test")) < 0.0009

"""Sync tools run in threads; with nothing else of the run in flight the loop waits for
the thread itself (Tool.invoke, `alone`), or calls a tool proven quick itself, and
still honours the step's deadline, Ctrl-C, the tool's own errors and concurrency with
other steps."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import lwtool.tools
from lwtool.record.errors import RunFailedError
from lwtool.runtime.interpreter import start_run
from lwtool.tools import QUICK_CALLS, Pace, ToolRegistry
from lwtool.world.local import LocalWorld

HEAD = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
        "metadata": {"name": "sync-tools"}}


def _chain(tool: str, steps: int, **extra: Any) -> dict[str, Any]:
    body = [{"id": f"s{i}", "uses": "tool.call", "with": {"tool": tool},
             "input": {"n": i}, "retry": {"maxAttempts": 1}, **extra,
             **({"needs": [f"s{i - 1}"]} if i else {})} for i in range(steps)]
    return {**HEAD, "permissions": {"tools": [tool]}, "steps": body}


def _run(tmp_path: Path, lwir: dict[str, Any], registry: ToolRegistry,
         run_input: Any = None) -> dict[str, Any]:
    world = LocalWorld(tmp_path / "data")
    try:
        return asyncio.run(start_run(world, lwir, run_input or {}, registry, {}))
    finally:
        world.close()


def _where(registry: ToolRegistry, blocking: bool | None = None, slow_at: int = -1,
           sleep: float = 0.2) -> list[str]:
    """Registers `where`, which notes the thread of each call (sleeping at `slow_at`)."""
    threads: list[str] = []

    def where(args: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        if args.get("n") == slow_at:
            time.sleep(sleep)
        return {"n": args.get("n")}

    registry.register("where", where, blocking=blocking)
    return threads


LOOP = threading.main_thread().name  # the thread `_run`'s event loop runs on


@pytest.fixture(autouse=True)
def _forgiving_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Quick means within 50 ms here: a garbage collection or a busy CI machine during
    a trivial call must not decide where the next one runs."""
    monkeypatch.setattr(lwtool.tools, "QUICK_S", 0.05)


def test_a_tool_is_proven_quick_by_its_last_calls() -> None:
    pace = Pace(adaptive=True)
    for _ in range(QUICK_CALLS - 1):
        pace.timed(lambda args: args, {})
    assert not pace.proven()
    pace.timed(lambda args: args, {})
    assert pace.proven()
    assert pace.on_loop(lambda args: time.sleep(0.06), {}) == (None, False)
    assert not pace.proven()  # a slow call: threads again until it proves itself again
    for _ in range(QUICK_CALLS):
        assert not pace.proven()
        pace.timed(lambda args: args, {})
    assert pace.proven()
    assert not Pace(adaptive=False).proven()


def test_lwtool_quick_tool_ms_sets_what_is_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    for text, seconds in (("", 0.001), ("5", 0.005), ("0", 0.0), ("0.5", 0.0005)):
        monkeypatch.setenv("LWTOOL_QUICK_TOOL_MS", text)
        assert lwtool.tools._quick_seconds() == seconds
    for text in ("x", "-1", "inf", "nan"):
        monkeypatch.setenv("LWTOOL_QUICK_TOOL_MS", text)
        with pytest.warns(UserWarning, match=f"LWTOOL_QUICK_TOOL_MS='{text}' is not a "):
            assert lwtool.tools._quick_seconds() == 0.001
    monkeypatch.setattr(lwtool.tools, "QUICK_S", 0.0)  # 0: never on the loop
    pace = Pace(adaptive=True)
    pace.streak = 100
    assert not pace.proven()


def test_a_sync_tool_runs_in_threads_until_proven_quick_then_on_the_loop(
        tmp_path: Path) -> None:
    registry = ToolRegistry()
    threads = _where(registry)
    result = _run(tmp_path, _chain("where", 20), registry)
    assert result["status"] == "completed" and result["output"] == {"n": 19}
    assert len(threads) == 20 and threads[QUICK_CALLS:] == [LOOP] * (20 - QUICK_CALLS)
    assert all(name.startswith("lwtool-tool") for name in threads[:QUICK_CALLS])


def test_a_tool_registered_as_blocking_always_runs_off_the_loop_thread(
        tmp_path: Path) -> None:
    registry = ToolRegistry()
    threads = _where(registry, blocking=True)
    result = _run(tmp_path, _chain("where", 20), registry)
    assert result["status"] == "completed" and result["output"] == {"n": 19}
    assert len(threads) == 20 and all(name.startswith("lwtool-tool") for name in threads)


def test_a_slow_call_sends_a_proven_tool_back_to_threads_until_it_proves_itself(
        tmp_path: Path) -> None:
    registry = ToolRegistry()
    threads = _where(registry, slow_at=5)
    result = _run(tmp_path, _chain("where", 12), registry)
    assert result["status"] == "completed"
    assert threads[3:6] == [LOOP] * 3  # the slow call was made on the loop
    assert all(name.startswith("lwtool-tool") for name in threads[:3] + threads[6:9])
    assert threads[9:] == [LOOP] * 3


def test_a_proven_tool_that_overruns_its_deadline_on_the_loop_fails_the_step(
        tmp_path: Path) -> None:
    """On the loop a call cannot be stopped, but a result past the deadline is not
    taken: the step fails with `timeout` as it would have in a thread."""
    registry = ToolRegistry()
    threads = _where(registry, slow_at=4, sleep=1.2)
    with pytest.raises(RunFailedError) as failed:
        _run(tmp_path, _chain("where", 6, timeoutMs=1000), registry)
    assert failed.value.cause_code == "timeout"
    assert threads[3:] == [LOOP, LOOP]  # s4 ran on the loop; s5 never ran


def test_a_proven_tool_may_run_an_event_loop_of_its_own(tmp_path: Path) -> None:
    """As in a worker thread, no loop runs where the tool is called: `asyncio.run`
    inside a sync tool works on the loop's thread too."""
    registry = ToolRegistry()
    threads: list[str] = []

    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n

    @registry.tool()
    def bridge(args: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"n": asyncio.run(double(args["n"]))}

    result = _run(tmp_path, _chain("bridge", 8), registry)
    assert result["status"] == "completed" and result["output"] == {"n": 14}
    assert threads[QUICK_CALLS:] == [LOOP] * (8 - QUICK_CALLS)


def test_proven_tools_of_parallel_branches_run_in_threads(tmp_path: Path) -> None:
    """Only a call with nothing else of its run in flight is made on the loop: a tool
    turning slow there holds up no sibling."""
    registry = ToolRegistry()
    threads = _where(registry)
    lwir = {**HEAD, "permissions": {"tools": ["where"]}, "steps": [
        *_chain("where", 5)["steps"],
        {"id": "each", "uses": "parallel", "needs": ["s4"], "with": {
            "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxConcurrency": 4},
         "steps": [{"id": "work", "uses": "tool.call", "with": {"tool": "where"}}]}]}
    result = _run(tmp_path, lwir, registry, {"items": [{"id": f"i{n}"} for n in range(4)]})
    assert result["status"] == "completed" and len(threads) == 9
    assert threads[3:5] == [LOOP, LOOP]
    assert all(name.startswith("lwtool-tool") for name in threads[5:])


def test_a_sync_tool_past_its_deadline_fails_the_step_in_time(tmp_path: Path) -> None:
    registry = ToolRegistry()

    @registry.tool()
    def slow(args: dict[str, Any]) -> dict[str, Any]:
        time.sleep(3)
        return {}

    started = time.monotonic()
    with pytest.raises(RunFailedError) as failed:
        _run(tmp_path, _chain("slow", 1, timeoutMs=1000), registry)
    assert time.monotonic() - started < 2.5
    assert failed.value.cause_code == "timeout"


def test_a_sync_tool_cannot_finish_past_a_short_deadline(tmp_path: Path) -> None:
    """A deadline shorter than the loop's own wait for the thread is kept exactly: the
    tool finishing after it does not make the step succeed."""
    registry = ToolRegistry()

    @registry.tool()
    def eight_ms(args: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.008)
        return {}

    with pytest.raises(RunFailedError) as failed:
        _run(tmp_path, _chain("eight_ms", 1, timeoutMs=2), registry)
    assert failed.value.cause_code == "timeout"


def test_a_sync_tool_raising_timeout_error_is_its_own_failure(tmp_path: Path) -> None:
    registry = ToolRegistry()

    @registry.tool()
    def gives_up(args: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.05)  # past one wait slice
        raise TimeoutError("upstream took too long")

    with pytest.raises(RunFailedError) as failed:
        _run(tmp_path, _chain("gives_up", 1), registry)
    assert failed.value.cause_code == "step_failed"
    assert "TimeoutError: upstream took too long" in failed.value.message


def test_sync_tools_of_parallel_branches_still_run_together(tmp_path: Path) -> None:
    registry = ToolRegistry()

    @registry.tool()
    def nap(args: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.3)
        return {"id": args["id"]}

    lwir = {**HEAD, "permissions": {"tools": ["nap"]}, "steps": [
        {"id": "first", "uses": "tool.call", "with": {"tool": "nap"}, "input": {"id": "x"}},
        {"id": "each", "uses": "parallel", "needs": ["first"], "with": {
            "items": "{{ input.items }}", "itemKey": "{{ item.id }}", "maxConcurrency": 4},
         "steps": [{"id": "work", "uses": "tool.call", "with": {"tool": "nap"}}]}]}
    started = time.monotonic()
    result = _run(tmp_path, lwir, registry, {"items": [{"id": f"i{n}"} for n in range(4)]})
    elapsed = time.monotonic() - started
    assert result["status"] == "completed" and len(result["output"]) == 4
    assert elapsed < 1.0, elapsed  # 0.3 s alone, then 4 x 0.3 s together (not 1.5 s)


def _interrupted(tmp_path: Path, lwir: dict[str, Any], registry: ToolRegistry) -> list[str]:
    """Run `lwir`, which a Ctrl-C interrupts; the types of the events it left."""
    world = LocalWorld(tmp_path / "data")
    loop = asyncio.new_event_loop()  # no asyncio.run: Ctrl-C raises where it lands
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(start_run(world, lwir, {}, registry, {},
                                              run_id="run_interrupted"))
        return [event.type for event in world.events("run_interrupted")]
    finally:
        signal.signal(signal.SIGINT, previous)
        loop.close()
        world.close()


def test_ctrl_c_while_the_loop_waits_for_a_sync_tool_interrupts_the_run(
        tmp_path: Path) -> None:
    """The KeyboardInterrupt is raised in the loop's thread during its wait: the run is
    interrupted (resumable), the tool is not failed for it."""
    registry = ToolRegistry()

    @registry.tool()
    def poke(args: dict[str, Any]) -> dict[str, Any]:
        time.sleep(0.002)  # the loop is waiting for this thread by now
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.003)
        return {}

    types = _interrupted(tmp_path, _chain("poke", 2), registry)
    assert "StepAttemptStarted" in types
    assert "StepAttemptFailed" not in types and "RunFailed" not in types


def test_ctrl_c_during_a_call_on_the_loop_interrupts_the_run(tmp_path: Path) -> None:
    """Ctrl-C lands in the tool's own frame when it runs on the loop's thread: the run is
    interrupted (resumable), the step is not failed for it."""
    registry = ToolRegistry()

    @registry.tool()
    def poke(args: dict[str, Any]) -> dict[str, Any]:
        if args["n"] == QUICK_CALLS + 1:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.1)  # the KeyboardInterrupt comes while it sleeps
        return {}

    types = _interrupted(tmp_path, _chain("poke", 8), registry)
    assert types.count("StepCompleted") == QUICK_CALLS + 1
    assert "StepAttemptFailed" not in types and "RunFailed" not in types

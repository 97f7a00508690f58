"""Sync tools run in threads, never on the event loop; with nothing else of the run in
flight the loop waits for the thread itself (Tool.invoke, `alone`), and still honours
the step's deadline, the tool's own errors and concurrency with other steps."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lwtool.record.errors import RunFailedError
from lwtool.runtime.interpreter import start_run
from lwtool.tools import ToolRegistry
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


def test_a_chain_of_sync_tools_runs_off_the_loop_thread(tmp_path: Path) -> None:
    threads: list[str] = []
    registry = ToolRegistry()

    @registry.tool()
    def where(args: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return {"n": args["n"]}

    result = _run(tmp_path, _chain("where", 20), registry)
    assert result["status"] == "completed" and result["output"] == {"n": 19}
    assert len(threads) == 20 and all(name.startswith("lwtool-tool") for name in threads)


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

    world = LocalWorld(tmp_path / "data")
    loop = asyncio.new_event_loop()  # no asyncio.run: Ctrl-C raises where it lands
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(start_run(world, _chain("poke", 2), {}, registry, {},
                                              run_id="run_interrupted"))
    finally:
        signal.signal(signal.SIGINT, previous)
        loop.close()
    types = [event.type for event in world.events("run_interrupted")]
    world.close()
    assert "StepAttemptStarted" in types
    assert "StepAttemptFailed" not in types and "RunFailed" not in types

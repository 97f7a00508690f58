"""A run's lock file in the local world: removed when its holder lets go (one file a run
would pile up in `locks/`), kept by a killed holder until the next holder lets go, and
never held by two at once while holders come and go."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from lwtool.world.base import RunLocked
from lwtool.world.local import LocalWorld
from lwtool.world.run_lock import hold_run_lock
from tests.conftest import ROOT, run_cli

EX = ROOT / "examples"


def test_the_lock_file_is_there_while_held_and_gone_after(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    lock = tmp_path / "data" / "locks" / "run_a.lock"
    with world.lock_run("run_a"):
        assert lock.read_text() == str(os.getpid())
        assert world.executing("run_a")
    assert not lock.exists()
    assert not world.executing("run_a")


def test_a_killed_holders_file_is_taken_over_then_removed(tmp_path: Path) -> None:
    """A process killed while holding leaves its file (and pid); the OS dropped its
    lock, so the next holder takes the file and removes it when done."""
    world = LocalWorld(tmp_path / "data")
    lock = tmp_path / "data" / "locks" / "run_a.lock"
    lock.write_text("999999999")
    with world.lock_run("run_a"):
        assert lock.read_text() == str(os.getpid())
    assert not lock.exists()


def test_a_lock_file_removed_behind_lwtools_back_is_let_go_quietly(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    lock = tmp_path / "data" / "locks" / "run_a.lock"
    with world.lock_run("run_a"):
        lock.unlink()  # someone cleaned the folder by hand
    assert not lock.exists()
    with world.lock_run("run_a"):  # and the run can be locked again
        assert lock.exists()


def test_a_held_lock_refuses_another_holder_and_keeps_its_file(tmp_path: Path) -> None:
    world = LocalWorld(tmp_path / "data")
    with world.lock_run("run_a"):
        with pytest.raises(RunLocked, match=f"pid {os.getpid()}"):
            with world.lock_run("run_a"):
                pass
        assert (tmp_path / "data" / "locks" / "run_a.lock").exists()


def test_holders_coming_and_going_never_hold_it_together(tmp_path: Path) -> None:
    """Threads take and let go of one lock as fast as they can (each open file is its
    own flock holder, as another process's would be). A holder that locked the file
    its predecessor had just removed must not count as holding the lock."""
    locks = tmp_path / "locks"
    locks.mkdir()
    inside = 0
    most = 0
    taken = 0
    guard = threading.Lock()

    def contend() -> None:
        nonlocal inside, most, taken
        for _ in range(1500):
            try:
                with hold_run_lock(locks, "run_a"):
                    with guard:
                        inside += 1
                        most = max(most, inside)
                        taken += 1
                    os.sched_yield()
                    with guard:
                        inside -= 1
            except RunLocked:
                pass

    threads = [threading.Thread(target=contend) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most == 1 and taken > 0
    assert list(locks.iterdir()) == []


def test_lwtool_run_leaves_no_lock_file(tmp_path: Path) -> None:
    """A run of a loop (and its many commits) through the CLI, in the local world."""
    data = tmp_path / "data"
    done = run_cli("run", str(EX / "refine-loop.lwir.yaml"), "--input",
                   str(EX / "inputs" / "refine-loop.json"), "--tools",
                   f"{EX / 'tools.py'}:tools", "--data-dir", str(data), "--quiet")
    assert done.returncode == 0, done.stderr
    assert list((data / "locks").iterdir()) == []


def test_an_ended_run_answers_from_its_log_while_its_lock_is_held(tmp_path: Path) -> None:
    """The process that ended a run may hold its lock a moment longer: a parent woken by
    its child's end reads the child's output then, not RunLocked. A run that has not
    ended is still refused while another holds it."""
    import asyncio

    from lwtool import run_workflow
    from lwtool.runtime.interpreter import resume_run
    from lwtool.tools import ToolRegistry

    world = LocalWorld(tmp_path / "data")
    flow = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
            "metadata": {"name": "one"}, "permissions": {"tools": ["echo"]},
            "steps": [{"id": "e", "uses": "tool.call",
                       "with": {"tool": "echo", "args": {"v": 7}}}]}
    tools = ToolRegistry()
    tools.register("echo", lambda args: args)
    done = asyncio.run(run_workflow(flow, {}, world=world, tools=tools, run_id="ended"))
    with world.lock_run("ended"):
        again = asyncio.run(resume_run(world, "ended", tools))
    assert again["output"] == done["output"] == {"v": 7}
    world.append("ended", [], status="running")  # as if it had not ended
    with world.lock_run("ended"), pytest.raises(RunLocked):
        asyncio.run(resume_run(world, "ended", tools))

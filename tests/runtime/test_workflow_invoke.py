"""workflow.invoke with real process kills: a parent invoking a loop workflow as a
child, then once per item of a parallel group, is SIGKILLed before a child starts,
while a child's step is in flight, after a child's step committed, and after a child
completed but before the parent recorded it; `lwtool replay PARENT` then ends with the
uninterrupted run's output, exactly one child run per invoke under the derived ids, and
no completed step of either run executed again."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from lwtool.record.ids import child_run_id
from tests.conftest import run_cli
from tests.runtime.test_kill_and_replay import (
    _calls,
    _env,
    _kill,
    _replay,
    _start,
    _uninterrupted,
    _wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("world_kind")]

INPUT = {"text": "go", "more": ["a", "b"]}
CHILD_PATHS = ["polish", "each[0].again", "each[1].again"]
OUTPUT = {"key": "done", "value": {"polish": "go!!!", "each": [
    {"text": "a!!!", "rounds": 3}, {"text": "b!!!", "rounds": 3}]}}
# an uninterrupted run: three children, each improving and checking three times
CALLS = Counter({"record:seed": 1, "record:done": 1, "publish:publish": 3,
                 **{f"{tool}:{tool}-{n}": 3 for tool in ("improve", "check")
                    for n in (1, 2, 3)}})


def _runs(work: Path) -> list[dict[str, object]]:
    return json.loads(run_cli("runs", "--data-dir", str(work / "data"), "--json",
                              env=_env(work)).stdout)


def _check_children(work: Path) -> None:
    """One child run per invoke, under the ids derived from the step paths, each
    completed, each naming the parent."""
    rows = {r["runId"]: r for r in _runs(work)}
    children = {k: v for k, v in rows.items() if k != "P"}
    assert sorted(children) == sorted(child_run_id("P", p) for p in CHILD_PATHS)
    assert {r["status"] for r in children.values()} == {"completed"}
    assert {r.get("parentRunId") for r in children.values()} == {"P"}


def test_an_uninterrupted_parent_and_its_children(tmp_path: Path) -> None:
    assert _uninterrupted(tmp_path, "invoke.lwir.yaml", INPUT) == OUTPUT
    assert _calls(tmp_path / "reference") == CALLS


@pytest.mark.parametrize("kill", [
    "StepCompleted@seed",         # before the first child starts
    "StepCompleted@check*",       # a child's step committed, its run going on
    "RunCompleted@",              # a child completed; the parent has not recorded it
    "StepCompleted@polish",       # the parent recorded the first child; none other started
])
def test_a_kill_at_each_point_replays_to_the_same_output(tmp_path: Path, kill: str) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "invoke.lwir.yaml", INPUT, "P", LWTOOL_FAULT_KILL_AFTER=kill)
    proc.wait(timeout=60)
    assert proc.returncode == -9, proc.stderr.read() if proc.stderr else ""
    result = _replay(work, "P")
    assert result["output"] == OUTPUT
    _check_children(work)
    assert _calls(work) == CALLS  # killed between commits: nothing ran twice


def test_a_kill_while_a_childs_step_is_in_flight(tmp_path: Path) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    proc = _start(work, "invoke.lwir.yaml", INPUT, "P", LWTOOL_TEST_BLOCK="improve-2")
    _wait_for(work / "blocked-improve-2", proc)
    _kill(proc)
    first = _runs(work)
    assert [r["runId"] for r in first if r["runId"] != "P"] == [child_run_id("P", "polish")]
    result = _replay(work, "P")
    assert result["output"] == OUTPUT
    _check_children(work)
    assert _calls(work) == CALLS + Counter({"improve:improve-2": 1})  # the one in flight


def test_a_kill_in_a_parallel_group_of_children(tmp_path: Path) -> None:
    work = tmp_path / "killed"
    work.mkdir()
    # the parent recorded one branch's child; the other's is in flight or done
    proc = _start(work, "invoke.lwir.yaml", INPUT, "P",
                  LWTOOL_FAULT_KILL_AFTER="StepCompleted@each[[]0].again")
    proc.wait(timeout=60)
    assert proc.returncode == -9
    before = _calls(work)
    result = _replay(work, "P")
    assert result["output"] == OUTPUT
    _check_children(work)
    after = _calls(work)
    assert after - before <= CALLS and sum((after - CALLS).values()) <= 1, (before, after)


"""A worker's queue claim ends in the commit that ends its run (PostgresWorld
.end_claim_with_run), on a real PostgreSQL: RunCompleted and RunFailed end it `done` and
`failed` in the same transaction, whichever way the append goes; a commit that does not
move the run's head, another worker's claim and a run that waits leave it claimed. Each
end is announced with the run's id (lwtool.runtime.child_ends): a parent waiting for
that child is woken, one waiting for another is not."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from lwtool.runtime.child_ends import RunEnds
from lwtool.world import postgres as postgres_module
from lwtool.world.base import NewEvent, RunStatusChanged
from lwtool.world.postgres import PostgresWorld
from lwtool.world.postgres_queue import RunQueue


def _claimed(world: PostgresWorld, run_id: str, worker: str = "w") -> None:
    world.register_version("v", {"steps": []})
    queue = RunQueue(world)
    queue.enqueue(run_id, "v", {}, {})
    claim = queue.claim(worker, 30.0)
    assert claim is not None and claim.run_id == run_id
    world.create_run(run_id, "v", {}, {}, [NewEvent("RunStarted", {})])


def _state(world: PostgresWorld, run_id: str) -> str:
    return str(world._read("SELECT state FROM lwtool.queue WHERE run_id = %s",
                           (run_id,))[0][0])


@pytest.fixture
def world(postgres_url: str, tmp_path: Path) -> Iterator[PostgresWorld]:
    opened = PostgresWorld(postgres_url, tmp_path)
    yield opened
    opened.close()


@pytest.mark.parametrize(("event", "status", "state"), [
    ("RunCompleted", "completed", "done"), ("RunFailed", "failed", "failed")])
@pytest.mark.parametrize("locking", [False, True], ids=["one trip", "the locking way"])
def test_the_final_commit_ends_the_claim(world: PostgresWorld,
                                         monkeypatch: pytest.MonkeyPatch, event: str,
                                         status: str, state: str, locking: bool) -> None:
    if locking:  # as after OPTIMISTIC misses: the run row's lock, plain statements
        monkeypatch.setattr(postgres_module, "OPTIMISTIC", 0)
    _claimed(world, "r")
    world.end_claim_with_run("r", "w")
    world.append("r", [NewEvent("StepCompleted", {}, "a")])
    assert _state(world, "r") == "claimed" and not world.claim_ended("r", forget=False)
    world.append("r", [NewEvent(event, {})], status=status)
    assert _state(world, "r") == state
    assert world.claim_ended("r") and not world.claim_ended("r")  # forgotten


def test_a_commit_that_does_not_move_the_head_leaves_the_claim(world: PostgresWorld) -> None:
    _claimed(world, "r")
    world.end_claim_with_run("r", "w")
    with pytest.raises(RunStatusChanged):  # not appended: the run is not waiting
        world.append("r", [NewEvent("RunCompleted", {})], status="completed",
                     when_status="waiting")
    assert _state(world, "r") == "claimed" and not world.claim_ended("r")


def test_another_workers_claim_and_a_waiting_run_are_left(world: PostgresWorld) -> None:
    _claimed(world, "r", worker="other")  # this worker's lease was lost to it
    world.end_claim_with_run("r", "w")
    world.append("r", [NewEvent("RunWaiting", {})], status="waiting")
    assert _state(world, "r") == "claimed"
    world.append("r", [NewEvent("RunCompleted", {})], status="completed")
    assert _state(world, "r") == "claimed" and not world.claim_ended("r")


@pytest.mark.parametrize("how", ["the final commit", "finish"])
def test_a_claims_end_wakes_who_waits_for_that_run(world: PostgresWorld, how: str) -> None:
    ends = RunEnds(world.url)

    async def scenario() -> tuple[bool, bool]:
        with ends.waiting("r") as mine, ends.waiting("other") as theirs:
            _claimed(world, "r")
            await asyncio.sleep(0.3)  # the listener listening (a missed end costs a look)
            if how == "finish":
                assert RunQueue(world).finish("r", "w", "done")
            else:
                world.end_claim_with_run("r", "w")
                world.append("r", [NewEvent("RunCompleted", {})], status="completed")
            try:
                await asyncio.wait_for(mine.wait(), 5.0)
            except TimeoutError:
                return False, theirs.is_set()
            await asyncio.sleep(0.1)
            return True, theirs.is_set()

    try:
        assert asyncio.run(scenario()) == (True, False)
    finally:
        ends.stop()


def test_a_renewal_racing_the_final_commit_is_no_lost_lease(world: PostgresWorld) -> None:
    """The heartbeat's renewal may run after the run's final commit ended the claim and
    before the committing thread heard back: the queue row says the claim ended with
    this worker (not lost); a takeover names another worker (lost)."""
    queue = RunQueue(world)
    _claimed(world, "r")
    world.end_claim_with_run("r", "w")
    assert not queue.ended_by("r", "w")  # still claimed: renewing is what it does
    world.append("r", [NewEvent("RunCompleted", {})], status="completed")
    assert not queue.renew("r", "w", 30.0) and queue.ended_by("r", "w")
    _claimed(world, "s", worker="other")  # taken over by another worker, which ended it
    assert RunQueue(world).finish("s", "other", "done")
    assert not queue.renew("s", "w", 30.0) and not queue.ended_by("s", "w")

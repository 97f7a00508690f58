"""The owner's side of distributed branches (lwtool.runtime.own_branches), against a
queue that records each statement: a group's branches are queued in one statement that
also claims as many as the worker has free slots for; those execute on the run's loop,
never more at once than the slots; their ends are written together with the next
claims (quick branches claimed further ahead), those of a group's last branches
together; branches other workers hold are not asked for again at each freed slot; a
branch executed here whose lease is lost, or that the world refuses, is left to the
worker that takes it, and an error of lwtool's own fails the run with it; a
world that refuses the statement fails each branch of it with the world's error."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from lwtool.runtime import own_branches
from lwtool.runtime.own_branches import BranchSlots, OwnBranches
from lwtool.world.base import WorldError
from lwtool.world.postgres_branches import BranchTask

FAN = {"id": "fan", "uses": "parallel", "steps": [{"id": "a", "uses": "tool.call",
                                                    "with": {"tool": "t"}}]}
SCOPE = SimpleNamespace(run=SimpleNamespace(run_id="r", journal=SimpleNamespace(paths=[]),
                                            lwir={"steps": [FAN]}))


class _Queue:
    """Records each pump as (ends, fresh prefixes, those claimed at once, stealable,
    steal); lets the owner steal what nobody else `holds`."""

    def __init__(self, holds: frozenset[str] = frozenset(), fail: bool = False) -> None:
        self.pumps: list[tuple[Any, ...]] = []
        self.cancelled: list[str] = []
        self.holds, self.fail = holds, fail

    def pump(self, run_id: str, worker: str, lease: float, ends: list[dict[str, Any]],
             fresh: list[tuple[Any, ...]], stealable: list[str], steal: int) -> list[Any]:
        self.pumps.append(([(e["prefix"], e["state"]) for e in ends], [f[0] for f in fresh],
                           [f[0] for f in fresh if f[5]], stealable, steal))
        if self.fail:
            raise WorldError("PostgreSQL at db: the server is away")
        mine = [f[0] for f in fresh if f[5]]
        stolen = [p for p in stealable if p not in self.holds][:steal]
        return [BranchTask(run_id, p, ["fan"], None, False, 1) for p in mine + stolen]

    def renew(self, *_: Any) -> bool:
        return True

    def cancel(self, run_id: str, prefixes: list[str]) -> None:
        self.cancelled += prefixes


class _Ends:
    def __init__(self) -> None:
        self.watched: dict[str, Any] = {}

    def watch(self, run_id: str, prefixes: list[str], heard: Any) -> None:
        self.watched.update(dict.fromkeys(prefixes, heard))

    def unwatch(self, run_id: str, prefixes: list[str]) -> None:
        for prefix in prefixes:
            self.watched.pop(prefix, None)

    def unwatch_run(self, run_id: str) -> None:
        self.watched.clear()


def _worker(queue: _Queue, slots: int) -> Any:
    return SimpleNamespace(slots=BranchSlots(slots), branch_queue=queue, ends=_Ends(),
                           setup=SimpleNamespace(name="w", lease=30.0, metrics=None),
                           log=lambda *_, **__: None,
                           heartbeat=SimpleNamespace(hold=lambda *_: lambda: None))


async def _group(own: OwnBranches, count: int, executed: list[str],
                 most: list[int], pause: float = 0.01, stagger: float = 0.0) -> list[Any]:
    """`count` branches asked for at once, branch n taking pause + n * stagger s."""
    running: list[str] = []

    def here(key: str) -> Any:
        async def body() -> str:
            running.append(key)
            most[0] = max(most[0], len(running))
            await asyncio.sleep(pause + int(key) * stagger)
            running.remove(key)
            executed.append(key)
            return f"here {key}"
        return body

    tasks = [asyncio.create_task(own.run(SCOPE, FAN, "fan", str(n), n, here(str(n))))
             for n in range(count)]
    try:
        return await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        own.close()


def test_a_groups_branches_are_queued_and_claimed_in_one_statement() -> None:
    queue, executed, most = _Queue(), [], [0]
    worker = _worker(queue, 2)
    outputs = asyncio.run(_group(OwnBranches(worker, "r"), 6, executed, most))
    assert outputs == [f"here {n}" for n in range(6)]
    assert sorted(executed) == [str(n) for n in range(6)] and most[0] == 2
    first = queue.pumps[0]  # a slot each, and AHEAD (2) more that wait for one
    assert first == ([], [f"fan[{n}]." for n in range(6)],
                     ["fan[0].", "fan[1].", "fan[2].", "fan[3]."], [], 0)
    # later statements write ends and claim the next branches: far fewer than one a
    # branch, and every end is written once
    assert len(queue.pumps) <= 4, queue.pumps
    written = [end for pump in queue.pumps for end in pump[0]]
    assert sorted(written) == sorted((f"fan[{n}].", "done") for n in range(6))
    assert worker.slots.used == 0 and not worker.ends.watched


def test_branches_others_hold_are_not_asked_for_at_each_freed_slot(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(own_branches, "LOOK_AGAIN", 0.05)
    monkeypatch.setattr(own_branches, "AHEAD", 0)  # one claimed: the others wait queued
    queue = _Queue(holds=frozenset({"fan[1].", "fan[2]."}))
    worker = _worker(queue, 1)
    own = OwnBranches(worker, "r")

    async def main() -> list[Any]:
        group = asyncio.create_task(_group(own, 3, [], [0]))
        await asyncio.sleep(0.2)  # fan[0] ends here; the others' holders are slow
        for _ in range(20):  # slots freed elsewhere in the worker meanwhile
            worker.slots.give(worker.slots.take(1))
            await asyncio.sleep(0)
        for prefix in ("fan[1].", "fan[2]."):
            worker.ends.watched[prefix](prefix, ("done", {"output": f"there {prefix}"}))
        return await group

    outputs = asyncio.run(main())
    assert outputs == ["here 0", "there fan[1].", "there fan[2]."]
    # a look at them each LOOK_AGAIN (0.05 s) at most, not one a freed slot
    asked = [pump for pump in queue.pumps if pump[3]]
    assert 1 <= len(asked) <= 8, queue.pumps


def test_a_refused_statement_fails_each_of_its_branches() -> None:
    queue = _Queue(fail=True)
    worker = _worker(queue, 2)
    outcomes = asyncio.run(_group(OwnBranches(worker, "r"), 3, [], [0]))
    assert all(isinstance(o, WorldError) and "the server is away" in str(o)
               for o in outcomes), outcomes
    assert len(queue.pumps) == 1 and worker.slots.used == 0


def test_branches_the_run_stops_waiting_for_give_their_slots_back() -> None:
    """fail_fast: the run cancels its branches. Those executing and those claimed and
    waiting for a slot end `cancelled`; those still queued are taken off the queue; no
    slot stays taken."""
    queue = _Queue()
    worker = _worker(queue, 2)
    own = OwnBranches(worker, "r")

    def slow() -> Any:
        async def body() -> str:
            await asyncio.sleep(5)
            return "late"
        return body

    async def main() -> None:
        tasks = [asyncio.create_task(own.run(SCOPE, FAN, "fan", str(n), n, slow()))
                 for n in range(6)]
        await asyncio.sleep(0.1)  # 2 executing, 2 claimed and waiting, 2 queued
        assert worker.slots.used == 2 and len(own.ready) == 2
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(0.05)  # the branches' own tasks unwind
        own.close()

    asyncio.run(main())
    assert worker.slots.used == 0 and own.ready == [] and own.kept == 0
    written = [end for pump in queue.pumps for end in pump[0]]
    assert sorted(written) == [(f"fan[{n}].", "cancelled") for n in range(4)]
    assert sorted(queue.cancelled) == ["fan[4].", "fan[5]."]


def test_a_run_whose_branches_all_wait_claimed_gets_a_slot_freed_by_another_run() -> None:
    """Run b claims its only branches AHEAD while run a holds the worker's one slot: none
    of b's is left queued, and b still starts them once a gives the slot back."""
    queue = _Queue()
    worker = _worker(queue, 1)
    first, second = OwnBranches(worker, "a"), OwnBranches(worker, "b")

    async def main() -> tuple[list[Any], list[Any]]:
        a = asyncio.create_task(_group(first, 3, [], [0]))
        await asyncio.sleep(0.005)  # a executes fan[0] in the slot
        b = await asyncio.wait_for(_group(second, 2, [], [0]), 5)
        return await a, b

    outputs = asyncio.run(main())
    assert outputs == ([f"here {n}" for n in range(3)], ["here 0", "here 1"])
    assert worker.slots.used == 0


def test_the_ends_of_a_groups_last_branches_are_written_together() -> None:
    """No claim is due once the group's branches are all claimed: their ends wait a
    moment (WRITE_AFTER) and go in one statement, not one each."""
    queue, executed = _Queue(), []
    worker = _worker(queue, 4)
    outputs = asyncio.run(_group(OwnBranches(worker, "r"), 4, executed, [0], stagger=0.01))
    assert outputs == [f"here {n}" for n in range(4)]
    assert len(queue.pumps) == 2, queue.pumps  # the claim, then the four ends
    assert sorted(queue.pumps[1][0]) == [(f"fan[{n}].", "done") for n in range(4)]


def test_quick_branches_are_claimed_further_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the run's branches are seen to be quick, a claim takes about CLAIM_AHEAD_S
    seconds of their work (AHEAD_MOST at most), not AHEAD: fewer statements a branch."""
    monkeypatch.setattr(own_branches, "CLAIM_AHEAD_S", 10.0)  # any branch is quick
    queue, executed, most = _Queue(), [], [0]
    worker = _worker(queue, 1)
    own = OwnBranches(worker, "r")
    assert own.ahead() == own_branches.AHEAD  # nothing executed yet
    outputs = asyncio.run(_group(own, 24, executed, most))
    assert outputs == [f"here {n}" for n in range(24)] and most[0] == 1
    assert own.ahead() == own_branches.AHEAD_MOST
    claimed = [len(pump[2]) + min(pump[4], len(pump[3])) for pump in queue.pumps]
    assert claimed[0] == 1 + own_branches.AHEAD  # a slot, and AHEAD
    assert claimed[1] == 1 + own_branches.AHEAD_MOST, queue.pumps  # then as many as it may
    assert len(queue.pumps) <= 5, queue.pumps  # 24 branches: not one statement each 3
    written = [end for pump in queue.pumps for end in pump[0]]
    assert sorted(written) == sorted((f"fan[{n}].", "done") for n in range(24))


def test_a_run_without_a_slot_claims_none_and_a_slot_it_does_not_get_costs_nothing() -> None:
    """While another run holds the worker's only slot, a group is queued with none of it
    claimed (any worker may take it); slots given back and taken by the other run
    before this one gets them cost no statement; the slot once free is taken."""
    queue = _Queue()
    worker = _worker(queue, 1)
    own = OwnBranches(worker, "b")

    async def main() -> list[Any]:
        worker.slots.take(1)  # the other run's branch executes in it
        group = asyncio.create_task(_group(own, 3, [], [0]))
        await asyncio.sleep(0.01)
        assert queue.pumps == [([], ["fan[0].", "fan[1].", "fan[2]."], [], [], 0)]
        for _ in range(10):  # given back, and taken again by the other run meanwhile
            worker.slots.give(1)
            worker.slots.take(1)
            await asyncio.sleep(0.001)
        assert len(queue.pumps) == 1, queue.pumps
        worker.slots.give(1)
        return await asyncio.wait_for(group, 5)

    assert asyncio.run(main()) == ["here 0", "here 1", "here 2"]
    assert worker.slots.used == 0


def _failing_group(own: OwnBranches, failure: Any) -> Any:
    """Two branches on one slot: fan[0] executes here and `failure(task)` is called
    while it does (it raises, or cancels the task as a lost lease does); fan[1] ends
    normally."""
    started = asyncio.Event()

    def here(key: str) -> Any:
        async def body() -> str:
            if key == "0":
                started.set()
                await asyncio.sleep(0.01)
                failure()
                await asyncio.sleep(5)
            return f"here {key}"
        return body

    async def main() -> tuple[list[Any], Any]:
        tasks = [asyncio.create_task(own.run(SCOPE, FAN, "fan", str(n), n, here(str(n))))
                 for n in range(2)]
        await started.wait()
        await asyncio.sleep(0.1)  # the failure has happened; fan[1] ran in the freed slot
        heard = own.worker.ends.watched.get("fan[0].")
        if heard is not None:  # left for another worker, which ends it
            heard("fan[0].", ("done", {"output": "there fan[0]."}))
        try:
            return await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True),
                                          5), heard
        finally:
            own.close()

    return main()


@pytest.mark.parametrize("failure", ["lease lost", "world away"])
def test_a_branch_that_cannot_end_here_is_left_to_the_worker_that_takes_it(
        failure: str) -> None:
    """Its lease lost (the heartbeat cancels it) or the world refusing its commit: its
    slot goes to the next branch, and the run waits for whoever takes it to end it."""
    queue = _Queue()
    worker = _worker(queue, 1)
    own = OwnBranches(worker, "r")

    def fail() -> None:
        if failure == "lease lost":  # what the heartbeat does when a renewal is refused
            own.branches["fan[0]."].task.cancel()  # type: ignore[union-attr]
        else:
            raise WorldError("PostgreSQL at db: the server is away")

    outputs, heard = asyncio.run(_failing_group(own, fail))
    assert heard is not None and outputs == ["there fan[0].", "here 1"]
    written = [end for pump in queue.pumps for end in pump[0]]
    assert written == [("fan[1].", "done")]  # fan[0]'s end is its new holder's to write
    assert worker.slots.used == 0


def test_an_error_of_lwtools_own_in_a_branch_fails_the_run_with_it() -> None:
    queue = _Queue()
    worker = _worker(queue, 1)
    own = OwnBranches(worker, "r")

    def broken() -> None:
        raise RuntimeError("a bug")

    outputs, heard = asyncio.run(_failing_group(own, broken))
    assert heard is None  # nobody else is waited for
    assert isinstance(outputs[0], RuntimeError) and outputs[1] == "here 1"
    written = sorted(end for pump in queue.pumps for end in pump[0])
    assert written == [("fan[0].", "cancelled"), ("fan[1].", "done")]
    assert worker.slots.used == 0

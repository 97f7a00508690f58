"""The owner's side of distributed branches queues them together: the branches asked
for while one enqueue is in flight go in the next one, as one statement; a world that
refuses an enqueue fails each branch of it with the world's error."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from lwtool.runtime.branches import RemoteBranches
from lwtool.world.base import WorldError


class _Queue:
    """Records each enqueue_many's prefixes; the first waits until `release` is set;
    every branch ends `done` at once once queued."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.release, self.fail = threading.Event(), fail

    def enqueue_many(self, branches: list[tuple[Any, ...]]) -> None:
        if not self.batches:
            self.release.wait(10)
        self.batches.append([b[1] for b in branches])
        if self.fail:
            raise WorldError("PostgreSQL at db: the server is away")

    def ends(self, run_id: str, prefixes: list[str]) -> dict[str, Any]:
        return {p: ("done", {"output": p}) for p in prefixes
                if any(p in batch for batch in self.batches)}

    def listen_ends(self, stop: Any, heard: Any) -> None:
        return None


async def _branches(remote: RemoteBranches, queue: _Queue, count: int) -> list[Any]:
    first = asyncio.create_task(remote.wait_for("r", "fan[0].", ["fan"], 0, False, []))
    await asyncio.sleep(0.05)  # the first enqueue is in flight, held
    rest = [asyncio.create_task(remote.wait_for("r", f"fan[{n}].", ["fan"], n, False, []))
            for n in range(1, count)]
    await asyncio.sleep(0.05)
    queue.release.set()
    return await asyncio.gather(first, *rest, return_exceptions=True)


def test_branches_asked_for_meanwhile_are_queued_in_one_statement() -> None:
    queue = _Queue()
    outputs = asyncio.run(_branches(RemoteBranches(queue), queue, 8))
    assert outputs == [f"fan[{n}]." for n in range(8)]
    assert queue.batches == [["fan[0]."], [f"fan[{n}]." for n in range(1, 8)]]


def test_a_refused_enqueue_fails_each_of_its_branches() -> None:
    queue = _Queue(fail=True)
    outcomes = asyncio.run(_branches(RemoteBranches(queue), queue, 3))
    assert all(isinstance(o, WorldError) and "the server is away" in str(o)
               for o in outcomes), outcomes
    assert len(queue.batches) == 2


def test_a_single_branch_is_queued_alone() -> None:
    queue = _Queue()
    queue.release.set()
    remote = RemoteBranches(queue)

    async def one() -> Any:
        return await remote.wait_for("r", "fan[0].", ["fan"], 0, False, [])

    assert asyncio.run(one()) == "fan[0]." and queue.batches == [["fan[0]."]]

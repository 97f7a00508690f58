"""Answers given while a run executes (`lwtool respond` to a run a process holds).

A step that waits for a person (human.input, or a parallel group whose branches wait)
while its scope or group still has other work waits on `Answers.given(paths)`: one
poller a run reads the log's `HumanInputReceived` events every POLL seconds while
anything waits, and when an answer to a wanted path has landed it reads the run's
journal again from the log (what committed since the run began included) and wakes
those waiting, so the step goes on at once instead of when the run would stop. The
run's last look before it stops (lwtool.runtime.interpreter) is `Answers.read`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from lwtool.record.journal import Journal
from lwtool.steps.human_input import RECEIVED
from lwtool.world.base import WorldError

POLL = 0.5  # seconds between looks at the log while a step waits for an answer


def answers_of(run: Any) -> Answers:
    """The run's Answers (one a run)."""
    found: Answers | None = run.memo.get("answers")
    if found is None:
        found = run.memo["answers"] = Answers(run)
    return found


def paths_of(requests: Iterable[dict[str, Any]], run_id: str) -> frozenset[str]:
    """The step paths of the human.input requests (WaitingForInput.requests) made in
    run `run_id`: a pipeline's step also passes up its sub-runs' requests (`runId`),
    whose answers are in their own logs (the pipeline is resumed once they are)."""
    return frozenset(str(r.get("stepPath")) for r in requests
                     if r.get("runId", run_id) == run_id)


class Answers:
    """The answers a run's waiting steps want, and the poller that finds them."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self._wanted: dict[asyncio.Future[None], frozenset[str]] = {}
        self._poller: asyncio.Task[None] | None = None

    def given(self, paths: frozenset[str]) -> asyncio.Future[None]:
        """A future done once one of `paths` is answered in the run's journal (read
        again from the log). Cancel it when no longer waiting."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        if paths & self.run.journal.answers.keys():
            future.set_result(None)
            return future
        self._wanted[future] = paths
        if self._poller is None or self._poller.done():
            self._poller = loop.create_task(self._poll())
        return future

    def read(self, paths: frozenset[str]) -> bool:
        """Whether one of `paths` is answered: in the journal already (read again since
        the step asked), or in the log, the journal then read again from it. The
        store's error is the caller's."""
        if paths & self.run.journal.answers.keys():
            return True
        received = {event.step_path for event in self.run.world.events(
            self.run.run_id, types=[RECEIVED])}
        if not paths & (received - self.run.journal.answers.keys()):
            return False
        self.run.journal = Journal.from_events(self.run.world.events(self.run.run_id))
        return True

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL)
            self._wanted = {f: p for f, p in self._wanted.items() if not f.done()}
            if not self._wanted:
                return
            try:
                if not self.read(frozenset().union(*self._wanted.values())):
                    continue
            except WorldError:  # the store cannot be read now: look again later
                continue
            answered = self.run.journal.answers.keys()
            for future, paths in self._wanted.items():
                if paths & answered and not future.done():
                    future.set_result(None)

"""A worker's heartbeat: one thread that, every few seconds, tells the world the worker
is alive (its row in `lwtool.workers`: last seen, runs and branches in hand; its lock
taken again if the server dropped it) and renews the lease of every claim it holds.
One thread for all of them, not one a claim: a branch does not pay for a thread. A
claim taken or ended pokes it: the row's counts (and the metrics' gauges) are brought up
to date at once, without renewing every lease again.

The beat runs in a thread of its own, so a loop held up (a commit waiting for a server
that is away, a tool that blocks its loop) never lets a claim run out while the worker
lives. A claim found to be another worker's (this one's lease ran out while the world
could not be reached, and another worker took it) cancels the task executing it: two
workers never go on executing one run or branch. A world that cannot be reached is
tried again at the next beat."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lwtool.runtime.worker_log import WorkerLog

MIN_GAP = 0.05  # seconds at least between two heartbeat writes


@dataclass
class _Held:
    renew: Callable[[], bool]
    what: str
    cancel: Callable[[], None]
    ended: bool = False


class Heartbeat:
    def __init__(self, registration: Any, every: float, log: WorkerLog, metrics: Any,
                 in_hand: Callable[[], tuple[int, int]]) -> None:
        self.registration, self.every, self.log = registration, every, log
        self.metrics, self.in_hand = metrics, in_hand
        self._held: dict[int, _Held] = {}
        self._guard = threading.Lock()
        self._stopped = threading.Event()
        self._poked = threading.Event()

    def hold(self, renew: Callable[[], bool], what: str) -> Callable[[], None]:
        """Renew a claim at each beat while the current task executes it; the returned
        call stops renewing it (before its claim is ended)."""
        holder, loop = asyncio.current_task(), asyncio.get_running_loop()

        def cancel() -> None:
            if holder is not None:
                loop.call_soon_threadsafe(holder.cancel)

        held = _Held(renew, what, cancel)
        with self._guard:
            self._held[id(held)] = held

        def end() -> None:
            held.ended = True
            with self._guard:
                self._held.pop(id(held), None)

        return end

    def poke(self) -> None:
        """What the worker has in hand changed: say so now, not at the next beat."""
        self._poked.set()

    def start(self) -> Callable[[], None]:
        threading.Thread(target=self._beat, name="lwtool worker heartbeat",
                         daemon=True).start()

        def stop() -> None:
            self._stopped.set()
            self._poked.set()
        return stop

    def _beat(self) -> None:
        renew_at = 0.0
        while not self._stopped.is_set():
            self._poked.clear()
            self._alive()
            if time.monotonic() >= renew_at:
                renew_at = time.monotonic() + self.every
                with self._guard:
                    held = list(self._held.values())
                for claim in held:
                    self._renew(claim)
            self._poked.wait(max(renew_at - time.monotonic(), 0.0))
            self._stopped.wait(MIN_GAP)  # pokes coming thick and fast: one write per gap

    def _alive(self) -> None:
        runs, branches = self.in_hand()
        try:
            self.registration.beat(runs, branches)
            error = None
        except Exception as exc:  # noqa: BLE001 - the world away, or refusing: said, kept on
            error = str(exc)
        if self.metrics is not None:
            self.metrics.beat(error)
            self.metrics.runs_in_hand.set(runs)
            self.metrics.branches_in_hand.set(branches)

    def _renew(self, claim: _Held) -> None:
        try:
            kept = claim.renew()
        except Exception as exc:  # noqa: BLE001 - the world away, or refusing: tried again
            if not claim.ended:  # (else the claim ended meanwhile)
                self.log("lease_not_renewed", f"{claim.what}: the lease could not be "
                         f"renewed: {exc}", level="warning")
            return
        if not kept and not claim.ended:  # (`ended` is set first when the claim ends)
            self.log("lease_lost", f"{claim.what}: the lease was lost to another worker; "
                     "stopped here", level="warning")
            claim.ended = True
            with self._guard:
                self._held.pop(id(claim), None)
            claim.cancel()

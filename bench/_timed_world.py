"""A local world whose transactions time their BEGIN and COMMIT (the fsync in strict
mode), for benches that split a step's time into its commit and the rest
(bench/profile_step.py --split, bench/runtime.py)."""

from __future__ import annotations

import time
from typing import Any

from lwtool.world.local import LocalWorld, _Transaction


class TimedTransaction(_Transaction):
    """Adds the seconds of its BEGIN and COMMIT to its world's `tx_seconds`; sleeps
    the world's `idle_s` after COMMIT (counted with it) when that is set."""

    __slots__ = ()

    def __enter__(self) -> Any:
        began = time.perf_counter()
        try:
            return super().__enter__()
        finally:
            self.world.tx_seconds += time.perf_counter() - began  # type: ignore[attr-defined]

    def __exit__(self, *exc: Any) -> None:
        began = time.perf_counter()
        try:
            super().__exit__(*exc)
            if self.world.idle_s:  # type: ignore[attr-defined]
                time.sleep(self.world.idle_s)  # type: ignore[attr-defined]
        finally:
            self.world.tx_seconds += time.perf_counter() - began  # type: ignore[attr-defined]


class TimedWorld(LocalWorld):
    tx_seconds = 0.0
    idle_s = 0.0

    def _tx(self, durable: bool = True) -> _Transaction:
        return TimedTransaction(self, durable)

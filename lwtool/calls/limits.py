"""Model limits: how many calls to one model may be in flight at once (`maxConcurrent`),
start per minute (`rpm`) and spend tokens per minute (`tpm`), across every step and
session of this process. A models file entry may be `{model, maxConcurrent, rpm, tpm}`
instead of a model string (lwtool.cli.runtime_options.load_models); `configure`
installs the limits, keyed by the model string, so two slots naming one model share
them. A call that has to wait says why once, through the caller's `waiting` hook (the
recorder logs `harness.model.waiting`, which live progress shows).

The limiter is one interface (`slot`, `used`): `Limiter` holds in one process; `share`
puts another behind the same two calls for a world shared by many processes (the CLI
installs lwtool.world.postgres_limits.SharedLimiter when it opens a PostgreSQL world).
Waiting polls a monotonic clock in short sleeps: no asyncio primitive is bound to one
event loop, so the limits hold across the loops a process runs one after another or side
by side (`lwtool worker` executes each run on a loop and thread of its own): a lock
makes the look at the limits and the taking of a place one step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

WINDOW = 60.0  # seconds: rpm and tpm count the last minute
POLL = 0.01  # seconds between looks while waiting for a slot


@dataclass(frozen=True)
class ModelLimits:
    max_concurrent: int | None = None
    rpm: int | None = None
    tpm: int | None = None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> ModelLimits:
        """From a models file entry's `maxConcurrent`, `rpm`, `tpm` (positive integers;
        ValueError naming the field otherwise)."""
        values: dict[str, int | None] = {}
        for key, field in (("maxConcurrent", "max_concurrent"), ("rpm", "rpm"),
                           ("tpm", "tpm")):
            value = entry.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{key} must be a positive integer, not {value!r}")
            values[field] = value
        return cls(**values)

    def reason(self, kind: str) -> str:
        """Why a call waits for the limit `kind` (max_concurrent, rpm or tpm), as
        `harness.model.waiting` says it (every limiter words it so)."""
        if kind == "max_concurrent":
            return f"maxConcurrent {self.max_concurrent}: that many calls in flight"
        if kind == "rpm":
            return f"rpm {self.rpm}: that many calls started in the last minute"
        return f"tpm {self.tpm}: that many tokens used in the last minute"


class Limiter:
    """The limits of one model in this process."""

    def __init__(self, limits: ModelLimits) -> None:
        self.limits = limits
        self.in_flight = 0
        self._lock = threading.Lock()
        self._starts: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()

    def _blocked(self, now: float) -> str | None:
        """Why a call may not start now (None: it may)."""
        while self._starts and self._starts[0] <= now - WINDOW:
            self._starts.popleft()
        while self._tokens and self._tokens[0][0] <= now - WINDOW:
            self._tokens.popleft()
        limits = self.limits
        if limits.max_concurrent is not None and self.in_flight >= limits.max_concurrent:
            return limits.reason("max_concurrent")
        if limits.rpm is not None and len(self._starts) >= limits.rpm:
            return limits.reason("rpm")
        if limits.tpm is not None and sum(n for _, n in self._tokens) >= limits.tpm:
            return limits.reason("tpm")
        return None

    @asynccontextmanager
    async def slot(self, waiting: Callable[[str], None]) -> AsyncIterator[None]:
        """Hold one call's place; `waiting(why)` is called once if it has to wait."""
        said = False
        while (why := self._take()) is not None:
            if not said:
                waiting(why)
                said = True
            await asyncio.sleep(POLL)
        try:
            yield
        finally:
            with self._lock:
                self.in_flight -= 1

    def _take(self) -> str | None:
        """Take a place when the limits allow one now; else why not."""
        with self._lock:
            now = time.monotonic()
            why = self._blocked(now)
            if why is None:
                self.in_flight += 1
                self._starts.append(now)
            return why

    def used(self, tokens: int) -> None:
        """Count a reply's tokens toward `tpm`."""
        with self._lock:
            self._tokens.append((time.monotonic(), tokens))


_LIMITERS: dict[str, Any] = {}
_CONFIGURED: dict[str, ModelLimits] = {}
_MAKE: list[Callable[[str, ModelLimits], Any]] = []  # share()'s, when given


def configure(limits: Mapping[str, ModelLimits]) -> None:
    """Install limits by model string (replacing those configured before)."""
    _CONFIGURED.clear()
    _CONFIGURED.update(limits)
    _install()


def share(make: Callable[[str, ModelLimits], Any]) -> None:
    """Hold the limits (configured before or after) across processes: `make(model,
    limits)` gives a limiter with this module's interface (`slot`, `used`) kept where
    they all look (lwtool.world.postgres_limits.SharedLimiter: a PostgreSQL world)."""
    _MAKE[:] = [make]
    _install()


def _install() -> None:
    make = _MAKE[0] if _MAKE else (lambda _, each: Limiter(each))
    _LIMITERS.clear()
    _LIMITERS.update({model: make(model, each) for model, each in _CONFIGURED.items()})


def limiter_for(model: str) -> Any:
    """The model's limiter (`slot`, `used`), or None when it has no limits."""
    return _LIMITERS.get(model)

"""Model limits shared by every process of a PostgreSQL world (`lwtool worker`s on many
machines, `lwtool run --world postgresql://...`): the interface of
lwtool.calls.limits.Limiter (`slot`, `used`), kept in the database, so a models file's
`maxConcurrent`, `rpm` and `tpm` hold for all of them together, not for each.

- `maxConcurrent`: place i of a model is a session advisory lock (a key hashed from the
  model and i) held on a connection of this process for the call. A process that dies
  lets go of its places with its connections, at once.
- `rpm`, `tpm`: rows of `lwtool.model_use` (a call's start; a reply's tokens), stamped
  with the server's clock, so machines whose clocks differ count one window. The look at
  the last window and the row of a new start are one transaction under the model's
  transaction advisory lock: two processes never both take the last place. Rows older
  than the window are removed as they go.

A call waits by looking again every POLL seconds (the database is asked, not a loop's
primitive), and says why once, as the in-process limiter does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from lwtool.world.base import StoreUnavailable
from lwtool.world.postgres_keys import advisory_key

POLL = 0.1  # seconds between looks while waiting for a place
PLACES = "model places"  # the world's lock connections that hold them (their name)
WINDOW = 60.0  # seconds rpm and tpm count (lwtool.calls.limits.WINDOW: the same minute)

_NOW = "extract(epoch from clock_timestamp())"


def _key(*parts: str) -> int:
    """The advisory lock key of a model's place or window."""
    return advisory_key("\0".join(("lwtool-model", *parts)))


class SharedLimiter:
    """The limits of one model across every process of one PostgreSQL world; `limits`
    has `max_concurrent`, `rpm`, `tpm` and `reason(kind)`, the words of a wait
    (lwtool.calls.limits.ModelLimits)."""

    def __init__(self, world: Any, model: str, limits: Any, window: float = WINDOW) -> None:
        self.world, self.model, self.limits, self.window = world, model, limits, window

    @asynccontextmanager
    async def slot(self, waiting: Callable[[str], None]) -> AsyncIterator[None]:
        """Hold one call's place; `waiting(why)` is called once if it has to wait."""
        said = False
        while True:
            why, place = await self._taken()
            if why is None:
                break
            if not said:
                waiting(why)
                said = True
            await asyncio.sleep(POLL)
        try:
            yield
        finally:
            if place is not None:
                await asyncio.to_thread(self._let_go, *place)

    async def _taken(self) -> tuple[str | None, tuple[Any, int] | None]:
        """`_take` in a thread. A wait cancelled meanwhile (a step's deadline) cannot
        stop the thread: the place it takes is let go when it is done, not left held on
        a connection nobody has (until the garbage collector closed it)."""
        taking = asyncio.ensure_future(asyncio.to_thread(self._take))
        try:
            return await asyncio.shield(taking)
        except asyncio.CancelledError:
            taking.add_done_callback(self._let_go_unused)
            raise

    def _let_go_unused(self, taking: asyncio.Future[Any]) -> None:
        if taking.cancelled() or taking.exception() is not None:
            return
        place = taking.result()[1]
        if place is not None:
            asyncio.get_running_loop().run_in_executor(None, self._let_go, *place)

    def used(self, tokens: int) -> None:
        """Count a reply's tokens toward `tpm` (only when there is such a limit). The
        reply is the step's already: a database that cannot be reached now leaves these
        tokens uncounted rather than failing it."""
        if self.limits.tpm is None or tokens <= 0:
            return
        try:
            with self.world._tx() as conn:
                conn.execute(f"INSERT INTO lwtool.model_use VALUES (%s, {_NOW}, 0, %s)",
                             (self.model, tokens))
        except StoreUnavailable:
            pass

    # -- the database side (in a thread) ----------------------------------------------

    def _take(self) -> tuple[str | None, tuple[Any, int] | None]:
        """(None, the place held) when a call may start now, its start counted; else
        (why not, None)."""
        place = None
        if self.limits.max_concurrent is not None:
            place = self._place()
            if place is None:
                return self.limits.reason("max_concurrent"), None
        try:
            why = self._count_start()
        except BaseException:
            if place is not None:
                self._let_go(*place)
            raise
        if why is not None and place is not None:
            self._let_go(*place)
            place = None
        return why, place

    def _place(self) -> tuple[Any, int] | None:
        """A free place (its connection and key), or None."""
        import psycopg

        conn = self.world._lock_connection(PLACES)
        try:
            for index in range(int(self.limits.max_concurrent or 0)):
                key = _key(self.model, str(index))
                if conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
                    return conn, key
        except psycopg.Error as exc:
            conn.close()
            raise StoreUnavailable(f"model limits: {exc}") from None
        self.world._release_lock(conn, 0, False, PLACES)  # kept: it holds none
        return None

    def _count_start(self) -> str | None:
        """Why a call may not start (rpm, tpm), or None and its start counted."""
        limits = self.limits
        if limits.rpm is None and limits.tpm is None:
            return None
        with self.world._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_key(self.model, "window"),))
            conn.execute(f"DELETE FROM lwtool.model_use WHERE model = %s AND at <= {_NOW} "
                         "- %s", (self.model, self.window))
            starts, tokens = conn.execute(
                "SELECT coalesce(sum(starts), 0), coalesce(sum(tokens), 0) FROM "
                "lwtool.model_use WHERE model = %s", (self.model,)).fetchone()
            if limits.rpm is not None and starts >= limits.rpm:
                return str(limits.reason("rpm"))
            if limits.tpm is not None and tokens >= limits.tpm:
                return str(limits.reason("tpm"))
            if limits.rpm is not None:
                conn.execute(f"INSERT INTO lwtool.model_use VALUES (%s, {_NOW}, 1, 0)",
                             (self.model,))
        return None

    def _let_go(self, conn: Any, key: int) -> None:
        self.world._release_lock(conn, key, True, PLACES)

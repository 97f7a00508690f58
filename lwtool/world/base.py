"""The World interface the runtime talks to. A local world (SQLite + files) implements
it now; a PostgreSQL world can implement the same methods later. Nothing here names a
storage engine.

Durability contract: `append` returns only after its events are committed (they survive
a kill -9 of the process at any later instant; with `durable=True` power loss as well);
`put_artifact` returns only after the payload is stored as durably, so an event that
points at an artifact is never committed before the artifact it names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

INLINE_LIMIT = 256 * 1024  # payloads larger than this live only in artifacts

# What a committed event survives (chosen per run; the world has a default):
# strict: power loss and OS crashes too (every result commit is flushed to the disk);
# process: any kill of the process, but an OS crash or power loss may lose the last
# commits (never corrupting the log: the run replays from what is left).
DURABILITY_MODES = ("strict", "process")
DEFAULT_DURABILITY = "strict"


def fsyncs(mode: str) -> bool:
    """Whether a run in durability `mode` flushes its result commits to the disk."""
    return mode == "strict"


def check_durability(mode: str) -> str:
    """A durability mode, or ValueError naming the ones there are."""
    if mode not in DURABILITY_MODES:
        raise ValueError(f"unknown durability {mode!r}: use strict (survives power loss) "
                         "or process (survives a killed process)")
    return mode


@dataclass(slots=True)
class Event:
    """One committed event. `seq` counts from 1 within its run, in commit order.
    Treat it as read-only (not frozen: a frozen dataclass costs three times as much to
    make, and a step makes a dozen events)."""

    seq: int
    run_id: str
    type: str
    payload: dict[str, Any]
    step_path: str | None
    at: float

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "type": self.type, "runId": self.run_id,
                "stepPath": self.step_path, "at": self.at, "payload": self.payload}


@dataclass(slots=True)
class NewEvent:
    """An event about to be appended (read-only, like Event)."""

    type: str
    payload: dict[str, Any]
    step_path: str | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: str
    version_id: str
    status: str  # running | completed | failed
    created_at: float
    updated_at: float
    input: Any
    options: dict[str, Any]

    @property
    def parent_run_id(self) -> str | None:
        """The run this one is part of (its `links.parentRunId`: a pipeline's sub-runs
        and planner sessions); None for a run of its own."""
        links = self.options.get("links") if isinstance(self.options, dict) else None
        parent = links.get("parentRunId") if isinstance(links, dict) else None
        return parent if isinstance(parent, str) else None


MAX_RUN_ID = 128  # characters
RUN_ID = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9_.-]{{0,{MAX_RUN_ID - 1}}}")


def check_run_id(run_id: str) -> str:
    """Run ids name files (locks, scratch): letters, digits, `_`, `.`, `-`; at most 128;
    no leading dot. Raises ValueError otherwise."""
    if not RUN_ID.fullmatch(run_id):
        raise ValueError(f"invalid run id {run_id!r}: use letters, digits, '_', '.' and '-' "
                         "(at most 128, not starting with '.' or '-')")
    return run_id


class WorldError(Exception):
    """The world's storage is unusable (corrupted, unreadable); the message names it."""


class RunNotFound(WorldError):
    pass


class RunConflict(WorldError):
    """A run id that exists already was given for a different run."""


class RunExists(WorldError):
    """`create_run` for a run id the world has already."""


class RunLocked(WorldError):
    """Another process is executing this run."""


class RunStatusChanged(WorldError):
    """A commit asked to land only while the run has a given status (`append`'s
    `when_status`) found another one; nothing was written."""


class ArtifactMissing(WorldError):
    pass


class StoreUnavailable(WorldError):
    """The store is intact as far as can be told but cannot be used now: read-only,
    full, another user's, busy. Never reported as damage."""


class RunLockLost(StoreUnavailable):
    """The connection holding a run's lock was closed (the server restarted, or ended
    the session): another process may hold the run now, so nothing more of it is
    committed here. It resumes from its log (`lwtool worker`: at its next claim)."""


class StepCommittedElsewhere(WorldError):
    """A step's StepCompleted is in the log already: another process (a worker whose
    lease ran out, and its successor) committed that step path and visit first. The
    commit is refused whole; the result the log holds stands."""


class StoreDamaged(WorldError):
    """Something read back from the world does not match what was written (an artifact
    against its content hash, a version against its id, an event against its chain)."""


class World(Protocol):
    """Storage for versions, runs, their event logs and artifacts."""

    data_dir: Any
    max_concurrent_steps: int
    durability: str  # the default of runs started here: strict | process

    def register_version(self, version_id: str, lwir: dict[str, Any],
                         durable: bool = True, canonical: str | None = None,
                         meta: Callable[[], Mapping[str, Any]] | None = None) -> None: ...

    def get_version(self, version_id: str) -> dict[str, Any] | None: ...

    def version_meta(self, version_id: str) -> dict[str, Any] | None: ...

    def create_run(self, run_id: str, version_id: str, run_input: Any,
                   options: dict[str, Any], first_events: Sequence[NewEvent],
                   durable: bool = True) -> list[Event]: ...

    def get_run(self, run_id: str) -> RunRecord: ...

    def list_runs(self) -> list[RunRecord]: ...

    def append(self, run_id: str, events: Sequence[NewEvent], status: str | None = None,
               artifacts: Sequence[tuple[str, bytes]] = (),
               durable: bool = True, when_status: str | None = None) -> list[Event]: ...

    def events(self, run_id: str, types: Sequence[str] | None = None) -> list[Event]: ...

    async def put_artifact(self, data: bytes, durable: bool = True) -> str: ...

    async def get_artifact(self, ref: str) -> bytes: ...

    def lock_run(self, run_id: str) -> Any: ...

    def sensitive_key(self) -> bytes: ...  # lwtool.world.keys: kept with the world

    def close(self) -> None: ...


class InspectedWorld(World, Protocol):
    """A world the web inspector (`lwtool ui`) can read: the World, plus the short
    read-only queries of lwtool/world/views.py (the local world's; another world
    answers the same ones its own way)."""

    def runs_page(self, status: str | None, text: str | None, offset: int, limit: int
                  ) -> tuple[int, list[RunRecord]]: ...

    def status_counts(self) -> dict[str, int]: ...

    def model_replies(self, run_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]: ...

    def run_head(self, run_id: str) -> tuple[int, str] | None: ...

    def executing(self, run_id: str) -> bool: ...

    def artifact_slice(self, ref: str, offset: int, length: int
                       ) -> tuple[bytes, int, bool]: ...


def shown_status(world: Any, run_id: str, status: str) -> str:
    """A run's stored `status` (running | completed | failed), or `interrupted`: marked
    running, but no live process executes it (killed; `lwtool replay` resumes it)."""
    if status != "running" or world.executing(run_id):
        return status
    return "interrupted"


def find_run(world: World, run_id: str) -> RunRecord | None:
    """The run's record, or None when the world has no such run."""
    try:
        return world.get_run(run_id)
    except RunNotFound:
        return None

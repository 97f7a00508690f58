"""Per-run state shared by every scope and step: the world, the journal, the recorder."""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import json
import os
import signal
from dataclasses import dataclass, field
from typing import Any

from lwtool.canonical.jcs import canonical_bytes
from lwtool.runtime.journal import Journal
from lwtool.tools import ToolRegistry
from lwtool.world.base import Event, NewEvent, World

INLINE_OUTPUT_LIMIT = 256 * 1024
FAULT_ENV = "LWTOOL_FAULT_KILL_AFTER"


def short_hash(value: Any) -> str:
    try:
        data = canonical_bytes(value)
    except ValueError:
        data = json.dumps(value, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class RunState:
    world: World
    run_id: str
    version_id: str
    lwir: dict[str, Any]
    run_input: Any
    tools: ToolRegistry
    models: dict[str, str]
    journal: Journal
    step_slots: asyncio.Semaphore
    artifacts: list[str] = field(default_factory=list)
    final: tuple[str, Any] | None = None  # (step path, output) of the last non-decision step
    _fault: tuple[str, str] | None = None

    def __post_init__(self) -> None:
        spec = os.environ.get(FAULT_ENV)
        if spec and "@" in spec:
            event_type, _, pattern = spec.partition("@")
            self._fault = (event_type, pattern)

    @property
    def workflow_view(self) -> dict[str, Any]:
        metadata = self.lwir.get("metadata") or {}
        return {"name": metadata.get("name"), "version": metadata.get("version"),
                "runId": self.run_id, "versionId": self.version_id}

    async def record(self, events: list[NewEvent], durable: bool = True,
                     artifacts: list[tuple[str, bytes]] | None = None,
                     status: str | None = None) -> list[Event]:
        """Append events. Durable commits (an fsync) run in a worker thread so the event
        loop keeps serving other branches meanwhile."""
        if durable:
            committed = await asyncio.to_thread(self.world.append, self.run_id, events, status,
                                                artifacts or (), True)
        else:
            committed = self.world.append(self.run_id, events, status, artifacts or (), False)
        if self._fault is not None:
            self._maybe_die(committed)
        return committed

    def _maybe_die(self, committed: list[Event]) -> None:
        """Fault injection for durability tests: SIGKILL this process right after a
        matching event is committed (LWTOOL_FAULT_KILL_AFTER=Type@stepPathGlob)."""
        assert self._fault is not None
        event_type, pattern = self._fault
        for event in committed:
            if event.type == event_type and fnmatch.fnmatchcase(event.step_path or "", pattern):
                os.kill(os.getpid(), signal.SIGKILL)

    async def envelope(self, value: Any, uses: str, mode: dict[str, Any] | None
                       ) -> tuple[dict[str, Any], list[tuple[str, bytes]]]:
        """The result envelope of an output, and small artifacts to commit with it."""
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        inline: list[tuple[str, bytes]] = []
        if len(data) > INLINE_OUTPUT_LIMIT:
            ref = await self.world.put_artifact(data)
        else:
            ref = f"artifact://sha256:{hashlib.sha256(data).hexdigest()}"
            inline.append((ref, data))
        envelope: dict[str, Any] = {
            "outputRef": ref,
            "artifacts": [],
            "metadata": {"uses": uses, "outputMode": (mode or {}).get("mode"),
                         "schemaHash": short_hash((mode or {}).get("schema"))
                         if mode and "schema" in mode else None},
        }
        if len(data) <= INLINE_OUTPUT_LIMIT:
            envelope = {"output": value, **envelope}
        self.artifacts.append(ref)
        return envelope, inline

    async def output_of(self, payload: dict[str, Any]) -> Any:
        """A committed step's output, read from its outputRef (the inline copy is a
        convenience; replay never depends on it)."""
        envelope = payload.get("envelope") or {}
        ref = envelope.get("outputRef")
        if ref is None:
            return envelope.get("output")
        if ref not in self.artifacts:
            self.artifacts.append(ref)
        return json.loads(await self.world.get_artifact(ref))

"""`lwtool verify`: check a data dir (or a PostgreSQL world) end to end, without
changing it.

For each run: its event log's hash chain and head, its stored input, its WorkflowVersion
against its id, every artifact its events name against its content hash. For the whole
store (no run named): every version, every inline artifact, every artifact file (a
regular file, named and placed by its own hash), and temp files that a killed writer
left behind (orphans: safe to delete, reported as warnings; `clean=True` removes them),
and run lock files nobody holds (left by killed runs, and one for every run by lwtool
before 2026-12-05: one warning for all; `clean=True` removes them as their holder would).
A problem is "damaged" (error) or "unused" (warning); reading errors propagate as
StoreUnavailable, since a store that cannot be read cannot be called damaged.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lwtool.world.base import (
    RUN_ID,
    ArtifactMissing,
    RunLocked,
    RunNotFound,
    StoreDamaged,
    WorldError,
)
from lwtool.world.local import LocalWorld
from lwtool.world.run_lock import hold_run_lock, holder_alive, pid_alive

_DIGEST = re.compile(r"[0-9a-f]{64}")
_TEMP = re.compile(r"\.(?:[0-9a-f]{64}|events\.db)\.(\d+)\.[0-9a-f]{8}\.tmp")


@dataclass(frozen=True, slots=True)
class Problem:
    subject: str  # a run id, an artifact ref, a version id or a path
    severity: str  # error (damage) | warning (harmless leftovers)
    message: str


@dataclass
class Verification:
    runs: int = 0
    events: int = 0
    versions: int = 0
    artifacts: int = 0
    problems: list[Problem] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        return any(p.severity == "error" for p in self.problems)

    def as_json(self) -> dict[str, Any]:
        return {"ok": not self.damaged, "runs": self.runs, "events": self.events,
                "versions": self.versions, "artifacts": self.artifacts,
                "problems": [asdict(p) for p in self.problems], "removed": self.removed}


def verify(world: Any, run_id: str | None = None, clean: bool = False) -> Verification:
    """Check one run (raises RunNotFound) or, with no `run_id`, the whole data dir (a
    local world's, or a PostgreSQL world's tables)."""
    result = Verification()
    records = [world.get_run(run_id)] if run_id else _records(world, result)
    checked: set[str] = set()  # artifact refs and version ids, each checked once
    for record in records:
        result.runs += 1
        _check_run(world, record.run_id, record.version_id, result, checked)
    if run_id is None:
        _check_versions(world, result, checked)
        _check_inline_artifacts(world, result, checked)
        if isinstance(world, LocalWorld):  # a PostgreSQL world keeps no files
            _check_files(world, result, checked, clean)
            _check_locks(Path(world.data_dir) / "locks", result, clean)
    result.artifacts = sum(ref.startswith("artifact://") for ref in checked)
    result.versions = len(checked) - result.artifacts
    return result


def _records(world: LocalWorld, result: Verification) -> list[Any]:
    try:
        return world.list_runs()
    except StoreDamaged as exc:  # one run's row is unreadable: report it, check the rest
        result.problems.append(Problem("runs", "error", str(exc)))
        return []


def _check_run(world: LocalWorld, run_id: str, version_id: str, result: Verification,
               checked: set[str]) -> None:
    def damaged(message: str) -> None:
        result.problems.append(Problem(run_id, "error", message))

    try:
        events = world.events(run_id)  # verifies the chain
    except StoreDamaged as exc:
        damaged(str(exc).removeprefix(f"run {run_id}: "))
        return
    result.events += len(events)
    checked.add(version_id)
    try:
        if world.get_version(version_id) is None:
            damaged(f"its WorkflowVersion {version_id} is missing")
    except StoreDamaged as exc:
        damaged(str(exc))
    for ref in sorted({ref for event in events for ref in _refs(event.payload)}):
        problem = _artifact_problem(world, ref)
        checked.add(ref)
        if problem:
            damaged(f"event data it depends on is damaged: {problem}")


def _refs(value: Any) -> Iterator[str]:
    """The artifact refs an event payload names (`outputRef`, `resultRef`, an envelope's
    `artifacts`), wherever they sit in it; a step's output values are not refs."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("outputRef", "resultRef") and isinstance(item, str):
                yield item
            elif key == "artifacts" and isinstance(item, list):
                yield from (ref for ref in item if isinstance(ref, str))
            elif key != "output":
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _artifact_problem(world: LocalWorld, ref: str) -> str | None:
    try:
        asyncio.run(world.get_artifact(ref))
    except (StoreDamaged, ArtifactMissing) as exc:
        return str(exc)
    return None


def _check_versions(world: LocalWorld, result: Verification, checked: set[str]) -> None:
    for version_id in world.version_ids():
        if version_id in checked:
            continue
        checked.add(version_id)
        for read in (world.get_version, world.version_meta):  # the LWIR, then its record
            try:
                read(version_id)
            except StoreDamaged as exc:
                result.problems.append(Problem(version_id, "error", str(exc)))


def _check_inline_artifacts(world: LocalWorld, result: Verification, checked: set[str]) -> None:
    for ref in world.inline_artifact_refs():
        if ref in checked:
            continue
        checked.add(ref)
        problem = _artifact_problem(world, ref)
        if problem:
            result.problems.append(Problem(ref, "error", problem))


def _check_files(world: LocalWorld, result: Verification, checked: set[str],
                 clean: bool) -> None:
    data_dir = Path(world.data_dir)
    root = data_dir / "artifacts" / "sha256"
    candidates = [p for p in (data_dir / "events").iterdir() if p.name.endswith(".tmp")]
    if root.is_dir():
        candidates += [p for p in root.rglob("*")]
    for path in sorted(candidates):
        if path.is_dir() and not path.is_symlink():
            if path.parent != root or not re.fullmatch(r"[0-9a-f]{2}", path.name):
                result.problems.append(Problem(str(path), "warning", "not part of the store"))
            continue
        temp = _TEMP.fullmatch(path.name)
        if temp:
            _orphan(path, int(temp.group(1)), result, clean)
            continue
        if not _DIGEST.fullmatch(path.name) or path.parent.name != path.name[:2]:
            result.problems.append(Problem(str(path), "warning", "not part of the store"))
            continue
        ref = f"artifact://sha256:{path.name}"
        if ref not in checked:
            checked.add(ref)
            problem = _artifact_problem(world, ref)
            if problem:
                result.problems.append(Problem(ref, "error", problem))


def _orphan(path: Path, pid: int, result: Verification, clean: bool) -> None:
    if pid != os.getpid() and pid_alive(pid):
        return  # a live process is writing it (not this one: verify writes none)
    if clean:
        path.unlink(missing_ok=True)
        result.removed.append(str(path))
        return
    result.problems.append(Problem(str(path), "warning", f"an orphan temp file (its writer, "
                                   f"pid {pid}, is gone): safe to delete, or pass --clean"))


def _check_locks(locks: Path, result: Verification, clean: bool) -> None:
    """Lock files nobody holds: taken and let go (which removes them) with `clean`,
    else counted in one warning. A held one is a run executing now: left alone."""
    left = []
    for path in sorted(locks.glob("*.lock")) if locks.is_dir() else []:
        name = path.name.removesuffix(".lock")
        if not RUN_ID.fullmatch(name):  # not a lock file of lwtool's
            continue
        if not clean:
            if not holder_alive(locks, name):
                left.append(path)
            continue
        try:
            with hold_run_lock(locks, name):
                pass
        except (RunLocked, WorldError):  # held now, or not a file lwtool can lock
            continue
        result.removed.append(str(path))
    if left:
        result.problems.append(Problem(str(locks), "warning", (
            f"{len(left)} lock file(s) nobody holds (left by killed runs, or by an "
            "earlier lwtool, which kept one a run): safe to delete, or pass --clean")))


__all__ = ["Problem", "RunNotFound", "Verification", "verify"]

"""Memory stores and run scratch: where they live under the data dir, and which of them
a role's session sees, at which `/mnt/...` path, read-only or writable.

Layout (the spec's):

    <dataDir>/memory/workflows/<workflowId>/   workflow store (lessons across runs)
    <dataDir>/memory/pipelines/<pipelineKey>/  pipeline store (the orchestrator's)
    <dataDir>/memory/org/                      org store (runbooks, org skills)
    <dataDir>/runs/<runId>/scratch/            the run's planner/session scratch
    <dataDir>/runs/<runId>/steps/<step>/scratch/   a worker's (or fixer's) scratch
    <dataDir>/runs/<pipelineId>/scratch/ and .../sub-runs/<runId>/...   under a pipeline

Memory persists across runs; a run's scratch is removed when the run ends
(lwtool.harness.scratch, which every run uses). Mount points:
/mnt/memory/{workflow,pipeline,org}, /mnt/memory/available-workflows/<id>,
/mnt/memory/peer-workflows/<id>, /mnt/scratch/{own,from-orchestrator,from-planner,peer-steps}.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from lwtool.harness.scratch import remove_scratch, run_dir
from lwtool.world.base import check_run_id

Access = Literal["rw", "ro", "none"]
ROLES = ("planner", "worker", "fixer", "orchestrator", "agent")
STORE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


@dataclass(frozen=True)
class Mount:
    """`source` (a host folder) seen at `target` inside the session; `store` names the
    memory store it is (None for scratch)."""

    target: str
    source: Path
    writable: bool
    store: str | None = None

    def describe(self) -> dict[str, object]:
        return {"target": self.target, "mode": "rw" if self.writable else "ro"}


@dataclass(frozen=True)
class MemoryConfig:
    """A definition's `memory`: the workflow store's access for the roles that may write
    it (planner, fixer; workers always read it only), the org store's (ro unless
    "rw"), and peer workflow stores attached read-only (`memory.attach`)."""

    workflow: Access = "rw"
    org: Access = "ro"
    attach: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, value in (("workflow", self.workflow), ("org", self.org)):
            if value not in ("rw", "ro", "none"):
                raise ValueError(f"memory.{name} must be rw, ro or none, not {value!r}")
        for peer in self.attach:
            store_name(peer, "memory.attach entry")

    @classmethod
    def from_json(cls, value: object) -> MemoryConfig:
        if value is None:
            return cls()
        if not isinstance(value, dict):
            raise ValueError("memory must be an object: {workflow, org, attach}")
        unknown = set(value) - {"workflow", "org", "attach"}
        if unknown:
            raise ValueError(f"memory has unknown keys: {', '.join(sorted(unknown))}")
        attach = value.get("attach") or []
        if not isinstance(attach, list) or not all(isinstance(a, str) for a in attach):
            raise ValueError("memory.attach must be a list of workflow ids")
        return cls(value.get("workflow", "rw"), value.get("org", "ro"), tuple(attach))


def store_name(value: str, what: str = "workflow id") -> str:
    """Ids that name store folders: letters, digits, `.`, `_`, `-` (no `..`, no `/`)."""
    if not STORE_ID.fullmatch(value) or ".." in value:
        raise ValueError(f"invalid {what} {value!r}: use letters, digits, '.', '_' and '-' "
                         "(at most 128, starting with a letter or digit)")
    return value


def pipeline_key(definition_hashes: Iterable[str]) -> str:
    """sha256 of the sorted WorkflowDefinitionHash list of the available workflows."""
    data = json.dumps(sorted(definition_hashes), separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class MemoryStores:
    """The memory folders of one data dir (created on first use, 0700)."""

    data_dir: Path

    def workflow(self, workflow_id: str) -> Path:
        return _folder(self.data_dir / "memory" / "workflows" / store_name(workflow_id))

    def pipeline(self, key: str) -> Path:
        return _folder(self.data_dir / "memory" / "pipelines" / store_name(key, "pipeline key"))

    def org(self) -> Path:
        return _folder(self.data_dir / "memory" / "org")


@dataclass(frozen=True)
class ScratchLayout:
    """A run's scratch folders; under `runs/<pipelineId>/sub-runs/` for a pipeline's
    sub-run."""

    data_dir: Path
    run_id: str
    pipeline_id: str | None = None

    @property
    def run_dir(self) -> Path:
        return run_dir(self.data_dir, self.run_id, self.pipeline_id)

    def run_scratch(self) -> Path:
        """The planner's (or a standalone session's) own scratch."""
        return _folder(self.run_dir / "scratch")

    def steps_dir(self) -> Path:
        return _folder(self.run_dir / "steps")

    def step_scratch(self, step_path: str) -> Path:
        return _folder(self.steps_dir() / step_folder(step_path) / "scratch")

    def orchestrator_scratch(self) -> Path | None:
        if self.pipeline_id is None:
            return None
        return _folder(self.data_dir / "runs" / check_run_id(self.pipeline_id) / "scratch")

    def remove(self) -> None:
        """Scratch is ephemeral: gone when the run ends (memory stays)."""
        remove_scratch(self.data_dir, self.run_id, self.pipeline_id)


def step_folder(step_path: str) -> str:
    """A step path (`review[2]/draft`) as one folder name (`review[2]%2Fdraft`)."""
    return quote(step_path, safe="[]-_.") if step_path not in (".", "..") else f"%2E{step_path}"


@dataclass(frozen=True)
class RoleMounts:
    """What a role's session sees: its mounts (scratch own first) and the memory
    store ids for its manifest."""

    mounts: list[Mount] = field(default_factory=list)

    @property
    def own(self) -> Mount:
        return next(m for m in self.mounts if m.target == "/mnt/scratch/own")

    def store_ids(self) -> list[str]:
        return sorted(f"{m.store}:{'rw' if m.writable else 'ro'}"
                      for m in self.mounts if m.store)


def role_mounts(role: str, data_dir: Path, scratch: ScratchLayout, *,
                workflow_id: str | None = None, memory: MemoryConfig | None = None,
                step_path: str | None = None, pipeline: str | None = None,
                available_workflows: Iterable[str] = (),
                planner_scratch: Path | None = None) -> RoleMounts:
    """The spec's mounts per role: planner (workflow rw, org ro, own scratch),
    worker (workflow ro, org ro, own step scratch, from-planner: `planner_scratch`, the
    planner session's own scratch of this run when it was planned, peer-steps), fixer
    (a worker that may write workflow memory), orchestrator (pipeline rw, org ro,
    available workflows ro), agent (a standalone session: like a planner,
    its workflow store writable when `memory.workflow` is rw)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    memory = memory or MemoryConfig()
    stores = MemoryStores(data_dir)
    in_step = role in ("worker", "fixer")
    if in_step and not step_path:
        raise ValueError(f"a {role} session needs the step path of its step")
    own = scratch.step_scratch(step_path or "") if in_step else scratch.run_scratch()
    mounts = [Mount("/mnt/scratch/own", own, True)]
    if in_step:
        mounts.append(Mount("/mnt/scratch/from-planner",
                            planner_scratch or scratch.run_scratch(), False))
        mounts.append(Mount("/mnt/scratch/peer-steps", scratch.steps_dir(), False))
    upper = scratch.orchestrator_scratch()
    if upper is not None and role != "orchestrator":
        mounts.append(Mount("/mnt/scratch/from-orchestrator", upper, False))
    if workflow_id is not None and memory.workflow != "none" and role != "orchestrator":
        writable = memory.workflow == "rw" and role in ("planner", "fixer", "agent")
        mounts.append(Mount("/mnt/memory/workflow", stores.workflow(workflow_id), writable,
                            f"workflows/{workflow_id}"))
    if role == "orchestrator":
        if pipeline is None:
            raise ValueError("an orchestrator session needs its pipeline key")
        mounts.append(Mount("/mnt/memory/pipeline", stores.pipeline(pipeline), True,
                            f"pipelines/{pipeline}"))
        for peer in sorted(set(available_workflows)):
            mounts.append(Mount(f"/mnt/memory/available-workflows/{peer}",
                                stores.workflow(peer), False, f"workflows/{peer}"))
    if memory.org != "none":
        mounts.append(Mount("/mnt/memory/org", stores.org(), memory.org == "rw", "org"))
    for peer in sorted(set(memory.attach) - {workflow_id}):
        mounts.append(Mount(f"/mnt/memory/peer-workflows/{peer}", stores.workflow(peer),
                            False, f"workflows/{peer}"))
    return RoleMounts(mounts)


def _folder(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path

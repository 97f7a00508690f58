"""What a harness session works in, materialized before it starts: for a session, its
mounts (memory stores and scratch), skills staged read-only, the bash tool, the tools
it is offered, its system prompt and its role's manifest; for a worker step under a
custom harness, the step's mounts and a bash tool on demand (`StepWorkspace`, nothing
created until asked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lwtool.calls.model_calls import model_label
from lwtool.harness.bash import BashOptions, BashTool
from lwtool.harness.fingerprints import tool_fingerprint
from lwtool.harness.manifests import NO_BASH, SessionCapabilities, role_manifest
from lwtool.harness.skills import (
    Skill,
    resolve_skills,
    skills_hash,
    skills_prompt,
    stage_skills,
)
from lwtool.harness.stores import (
    MemoryConfig,
    MemoryStores,
    Mount,
    RoleMounts,
    ScratchLayout,
    role_mounts,
)
from lwtool.record.ids import short_hash
from lwtool.tools import ToolRegistry
from lwtool.world.base import World

if TYPE_CHECKING:
    from lwtool.harness.session_spec import SessionSpec


@dataclass
class Workspace:
    """A session's materialized surroundings: mounts, skills, bash, the tools it is
    offered, its full system prompt and its manifest."""

    scratch: ScratchLayout
    mounts: list[Mount]
    skills: list[Skill]
    warnings: list[str]
    bash: BashTool | None
    tools: ToolRegistry
    system: str
    manifest: dict[str, Any]


def session_workspace(world: World, spec: SessionSpec, tools: ToolRegistry, run_id: str,
                      harness_id: str, step_path: str) -> Workspace:
    """Lay out the session's scratch and memory, resolve and stage its skills, make its
    bash tool (failing closed where the sandbox cannot run) and compute its manifest."""
    data_dir = Path(world.data_dir)
    scratch = ScratchLayout(data_dir, run_id, spec.pipeline_run)
    step = step_path if spec.role in ("worker", "fixer") else None
    placed = role_mounts(spec.role, data_dir, scratch, workflow_id=spec.workflow_id,
                         memory=spec.memory, step_path=step, pipeline=spec.pipeline,
                         available_workflows=spec.available_workflows)
    skills, warnings = _skills(data_dir, spec.skills, spec.memory)
    mounts = _with_staged(placed, skills)
    bash = BashTool(mounts, spec.bash, scratch.run_dir / "tmp", spec.role) if spec.bash \
        else None
    registry = tools
    if bash is not None:
        if "bash" in tools.tools:
            raise ValueError("the session offers its own bash tool: rename the tool 'bash'")
        registry = ToolRegistry({**tools.tools, "bash": bash.tool()})
    system = "\n\n".join(part for part in (skills_prompt(skills), spec.system) if part)
    caps = SessionCapabilities(
        harness_id, model_label(spec.model), system, skills_hash(skills),
        short_hash({name: tool_fingerprint(registry.tools[name])
                    for name in registry.names()}),
        short_hash(bash.capabilities()) if bash else NO_BASH, placed.store_ids())
    manifest = role_manifest(spec.role, caps, spec.identity)
    return Workspace(scratch, mounts, skills, warnings, bash, registry, system, manifest)


@dataclass
class StepWorkspace:
    """A worker step's surroundings for a custom harness: `mounts()` lays out the
    worker's mounts (its step scratch rw; the planner's scratch, the other steps' and
    the memory stores ro), `bash()` makes a bash tool over them with the definition's
    worker skills staged at `.agents/skills/`. Nothing is created until asked; the
    run's scratch is removed when the run ends."""

    data_dir: Path
    run_id: str
    step_path: str
    workflow_id: str | None = None
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    skills: tuple[str, ...] = ()
    role: str = "worker"
    planner_run_id: str | None = None  # the planner session whose scratch is from-planner
    pipeline_run: str | None = None  # the pipeline run this run is a sub-run of

    @classmethod
    def of_run(cls, run: Any, step_path: str) -> StepWorkspace:
        """The workspace of a step of `run` (a RunState) with its definition's settings."""
        data_dir, workflow_id, memory, skills = _run_defaults(run)
        planner = run.workspace.get("plannerRunId")
        pipeline = run.workspace.get("pipelineRunId")
        return cls(data_dir, run.run_id, step_path, workflow_id, memory, skills,
                   planner_run_id=str(planner) if planner else None,
                   pipeline_run=str(pipeline) if pipeline else None)

    def _placed(self) -> RoleMounts:
        planner = ScratchLayout(self.data_dir, self.planner_run_id,
                                self.pipeline_run).run_scratch() \
            if self.planner_run_id else None
        return role_mounts(self.role, self.data_dir, self._layout(),
                           workflow_id=self.workflow_id, memory=self.memory,
                           step_path=self.step_path, planner_scratch=planner)

    def mounts(self) -> list[Mount]:
        return self._placed().mounts

    def store_ids(self) -> list[str]:
        """The memory stores of the role's mounts, as its manifest lists them."""
        return self._placed().store_ids()

    def resolved_skills(self) -> tuple[list[Skill], list[str]]:
        return _skills(self.data_dir, self.skills, self.memory)

    def bash(self, options: BashOptions | None = None) -> BashTool:
        """Raises BashUnavailable where the sandbox cannot run (fail closed)."""
        mounts = _with_staged(self._placed(), self.resolved_skills()[0])
        return BashTool(mounts, options or BashOptions.from_env(),
                        self._layout().run_dir / "tmp", self.role)

    def _layout(self) -> ScratchLayout:
        return ScratchLayout(self.data_dir, self.run_id, self.pipeline_run)


def _skills(data_dir: Path, sources: tuple[str, ...],
            memory: MemoryConfig) -> tuple[list[Skill], list[str]]:
    """The declared skills unioned with the org store's (unless org memory is off)."""
    org = MemoryStores(data_dir).org() / "skills" if memory.org != "none" else None
    return resolve_skills(sources, data_dir / "skills-cache", org)


def _with_staged(placed: RoleMounts, skills: list[Skill]) -> list[Mount]:
    """The role's mounts plus its skills staged at `.agents/skills/` in its own scratch,
    mounted read-only."""
    mounts = list(placed.mounts)
    if skills:
        mounts.append(Mount(f"{placed.own.target}/.agents",
                            stage_skills(skills, placed.own.source), False))
    return mounts


def _run_defaults(run: Any) -> tuple[Any, ...]:
    """What every step's workspace of `run` shares, built once per run."""
    found: tuple[Any, ...] | None = run.memo.get("workspace")
    if found is None:
        settings = run.workspace
        found = run.memo["workspace"] = (
            Path(run.world.data_dir), settings.get("workflowId"),
            MemoryConfig.from_json(settings.get("memory")),
            tuple(settings.get("skills") or ()))
    return found

"""What a harness session is asked to do (SessionSpec): its role, model, prompt, and
what it may use. Its subject is what a session run's version id is taken over."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lwtool.calls.agent_loop import DEFAULT_MAX_TURNS
from lwtool.calls.model_calls import model_label
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.bash import BashOptions
from lwtool.harness.stores import MemoryConfig

HARNESS_ID = "lwtool/agent-harness@1"
SESSION_KIND = "HarnessSession"
SESSION_PATH = "session"  # the events' step path: one session per run
TASKS = {"planner": "plan", "worker": "execute_step", "fixer": "fix_step",
         "orchestrator": "orchestrate", "agent": "agent"}


@dataclass(frozen=True)
class SessionSpec:
    """What a session is asked to do, by which model, and what it may use: the memory
    of `workflow_id` (per `memory`), `skills` (folders or `git+` URLs), the bash tool
    (`bash`; None offers none), and the role's own manifest fields (`identity`, e.g. a
    planner's workflowDefinitionHash; see lwtool.harness.manifests). An orchestrator
    names its `pipeline` store key and the `available_workflows` whose stores it reads;
    a session inside a pipeline run names it (`pipeline_run`: its scratch nests there
    and it sees the orchestrator's at /mnt/scratch/from-orchestrator). `links` go into
    RunStarted (the runs this one belongs with); they are not part of its identity, nor
    is its `budget` (recorded with the session; a resume without one keeps it)."""

    role: str
    model: str | ScriptedModel
    prompt: str
    system: str = ""
    max_turns: int = DEFAULT_MAX_TURNS
    workflow_id: str | None = None
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    skills: tuple[str, ...] = ()
    bash: BashOptions | None = None
    identity: dict[str, Any] = field(default_factory=dict)
    keep_scratch: bool = False  # a planner's, for the run it plans: removed with that run
    pipeline: str | None = None
    available_workflows: tuple[str, ...] = ()
    pipeline_run: str | None = None
    links: dict[str, Any] = field(default_factory=dict)
    # {maxTokens, maxCostUsd} held before each model call, against every reply under
    # `budget_root` (the run or pipeline the session serves; default: the session)
    budget: dict[str, Any] | None = None
    budget_root: str | None = None
    # what `lwtool runs`, the inspector and OTel call the session (a pipeline's id; not
    # part of its identity); default: its role and the workflow it serves
    name: str | None = None
    # A custom harness (an orchestrator's `orchestrator.harness`): its `run(task, ctx)`
    # answers `task` instead of the model's agent loop; its harness_id goes into the
    # manifest (resumed under another harness: capability drift)
    harness: Any = None
    task: Any = None

    def __post_init__(self) -> None:
        if self.role not in TASKS:
            raise ValueError(f"role must be one of {', '.join(TASKS)}, not {self.role!r}")
        if self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")

    def subject(self) -> dict[str, Any]:
        subject = {"kind": SESSION_KIND, "role": self.role, "task": TASKS[self.role],
                   "model": model_label(self.model), "system": self.system,
                   "prompt": self.prompt, "maxTurns": self.max_turns}
        if self.workflow_id is not None:
            subject["workflowId"] = self.workflow_id
        if self.skills:
            subject["skills"] = list(self.skills)
        if self.bash is not None:
            subject["bash"] = True
        return subject

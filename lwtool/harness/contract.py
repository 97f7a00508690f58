"""The harness contract: `Harness.run(task, ctx) -> HarnessResult`.

Every role runs in a harness session, discriminated by the task's kind: `plan`
(planner), `execute_step` (worker), `fix_step` (fixer), `orchestrate` (orchestrator).
A harness is one class with one async method; lwtool ships the default workflow
harness (lwtool.harness.workflow) and runs any other that a definition
(`worker.harness: module:attr`), the CLI (`--harness module:attr`) or the API
(`harness=`) names. A harness declares `harness_id` (recorded in the session's
manifest; a run resumed under another harness is capability drift).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from lwtool.tools import ToolRegistry
from lwtool.world.base import NewEvent

TaskKind = Literal["plan", "execute_step", "fix_step", "orchestrate"]


@dataclass(frozen=True)
class ExecuteStepTask:
    """Execute one step attempt (every type but parallel, which the scheduler runs)."""

    step: dict[str, Any]
    step_path: str
    step_input: Any
    expression_scope: dict[str, Any]
    kind: TaskKind = "execute_step"


@dataclass(frozen=True)
class FixStepTask:
    """Heal a failed code.run attempt (the fixer role)."""

    step: dict[str, Any]
    step_path: str
    step_input: Any
    original_attempt_error: dict[str, Any]
    prior_fix_attempts: int = 0
    kind: TaskKind = "fix_step"


@dataclass(frozen=True)
class PlanTask:
    """Draft LWIR for an OrchestrationRequest (the planner role)."""

    request: dict[str, Any]
    kind: TaskKind = "plan"


@dataclass(frozen=True)
class OrchestrateTask:
    """Compose workflows for a request (the orchestrator role)."""

    request: dict[str, Any]
    kind: TaskKind = "orchestrate"


HarnessTask = ExecuteStepTask | FixStepTask | PlanTask | OrchestrateTask


@dataclass
class HarnessContext:
    """What a session may use. `recorder` is the durable sink (the run's journal, its
    `note`/`record`, world and tool threads: give it to lwtool.calls.agent_loop.run_agent
    and lwtool.calls.tool_calls.call_tool); `scope` is the runtime's view of the
    workflow (expressions, earlier outputs) for the built-in step types; `workspace`
    (a lwtool.harness.workspace.StepWorkspace; a custom harness gets its worker step's,
    the built-in one lays it out itself when it needs it) lays out the step's mounts
    and makes a bash tool over them on demand."""

    recorder: Any
    tools: ToolRegistry
    model: Any = None
    system: str = ""
    scope: Any = None
    mounts: dict[str, Any] = field(default_factory=dict)
    bash: Any = None
    skills: list[Any] = field(default_factory=list)
    workspace: Any = None
    path: str = ""  # the session's step path, where `call` records its tool calls

    async def call(self, name: str, args: Any, call_id: str) -> Any:
        """Call one of `tools` durably, recorded under `path` in the session's log: a
        call whose `call_id` was committed before (a resumed session) is answered from
        the log, not made again. Give each call its own stable id ("orchestrate#1")."""
        from lwtool.calls.tool_calls import call_tool

        tool = self.tools.get(name)
        if tool is None:
            raise KeyError(f"no tool '{name}' (offered: {', '.join(self.tools.names())})")
        return await call_tool(self.recorder, self.path, tool, args, "model", call_id)


@dataclass
class HarnessResult:
    kind: TaskKind
    output: Any
    events: list[NewEvent] = field(default_factory=list)  # committed with the result
    artifact_refs: list[str] = field(default_factory=list)


@runtime_checkable
class Harness(Protocol):
    harness_id: str

    async def run(self, task: HarnessTask, ctx: HarnessContext) -> HarnessResult: ...

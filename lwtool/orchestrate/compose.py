"""Composing workflows as typed tools (the spec's newer surface): `as_harness_workflow(
definition)` makes a definition a tool (its id as the name, its description, its input
schema as the parameters); `create_harness(workflows=[...], model=..., system=...)`
returns an agent whose `await agent.run(input, world=...)` is a harness session offered
those tools (and any others): calling one plans the workflow once per session and runs
it as a sub-run, durably, at most `max_concurrent_sub_runs` at once. The machinery is
the orchestrator's (sub-runs under reserved ids, resume, rollup of cost)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from lwtool.orchestrate.pipeline import (
    DEFAULT_MAX_CONCURRENT_SUB_RUNS,
    DEFAULT_MAX_SUB_RUNS,
    Available,
    Pipeline,
)
from lwtool.tools import ToolRegistry
from lwtool.world.base import World


@dataclasses.dataclass(frozen=True)
class HarnessWorkflow:
    """A definition offered as a tool: `name`, `description`, `parameters` (its input
    JSON Schema)."""

    workflow: Available

    @property
    def name(self) -> str:
        from lwtool.orchestrate.subruns import tool_name

        return tool_name(self.workflow.id)

    @property
    def description(self) -> str:
        return str(self.workflow.definition.get("description") or "")

    @property
    def parameters(self) -> dict[str, Any]:
        schema = (self.workflow.definition.get("input") or {}).get("schema")
        return schema if isinstance(schema, dict) else {"type": "object"}


def as_harness_workflow(definition: Any, base: Path | None = None) -> HarnessWorkflow:
    """A definition (a file, a dict, what `define_workflow` or `load_definition`
    returns) as a typed tool; raises WorkflowInvalid when it does not validate."""
    from lwtool.orchestrate.pipeline import available

    if isinstance(definition, HarnessWorkflow):
        return definition
    return HarnessWorkflow(available(definition, base))


@dataclasses.dataclass(frozen=True)
class HarnessAgent:
    """What `create_harness` returns; `run` may be called many times (each a run)."""

    pipeline: Pipeline
    tools: ToolRegistry | None = None

    async def run(self, input: Any, *, world: World | None = None,  # noqa: A002 - spec
                  tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                  run_id: str | None = None, models: Mapping[str, str] | None = None,
                  **options: Any) -> dict[str, Any]:
        """Run the agent on `input` (text, or JSON the model is shown); `tools` are the
        ones the workflows' steps call; an existing `run_id` resumes. Returns the
        RunResult ({runId, status, output, usage, subRuns, ...})."""
        from lwtool.orchestrate.api import orchestrate

        return await orchestrate(self.pipeline, input, world=world, tools=tools,
                                 models=models, run_id=run_id, typed=True,
                                 session_tools=self.tools or ToolRegistry(), **options)


def create_harness(*, workflows: Sequence[Any], model: Any, system: str = "",
                   tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                   max_concurrent_sub_runs: int = DEFAULT_MAX_CONCURRENT_SUB_RUNS,
                   skills: Sequence[str] = (), name: str = "harness",
                   base: Path | None = None,
                   max_sub_runs: int = DEFAULT_MAX_SUB_RUNS) -> HarnessAgent:
    """An agent on `model` (a litellm model string or a ScriptedModel) with `system`,
    offered each of `workflows` (definitions or `as_harness_workflow` tools) as a tool
    of its own, and `tools` (its own, besides the workflows)."""
    offered = tuple(as_harness_workflow(w, base).workflow for w in workflows)
    pipeline = Pipeline(name, offered, model, system, tuple(skills), max_concurrent_sub_runs,
                        base=base or Path.cwd(), max_sub_runs=max_sub_runs)
    return HarnessAgent(pipeline, ToolRegistry.of(tools) if tools is not None else None)

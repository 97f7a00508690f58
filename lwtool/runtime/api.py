"""The Python API: `run_workflow(...)` and `replay_run(...)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lwtool.tools import ToolRegistry
from lwtool.world.base import World


class WorkflowInvalid(ValueError):
    """The workflow file does not validate; `findings` say where."""

    def __init__(self, path: str, findings: list[Any]) -> None:
        super().__init__(f"{path} is not a valid workflow ({len(findings)} finding(s))")
        self.path = path
        self.findings = findings


def load_lwir(path: str | Path) -> dict[str, Any]:
    """Load and validate an LWIR file for running (raises WorkflowInvalid)."""
    from lwtool.compile import compile_file

    compiled = compile_file(path)
    if not compiled.ok or compiled.kind != "Workflow":
        findings = compiled.findings
        raise WorkflowInvalid(str(path), findings)
    value: dict[str, Any] = compiled.value
    return value


async def run_workflow(workflow: str | Path | Mapping[str, Any], run_input: Any, *,
                       world: World | None = None,
                       tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                       models: Mapping[str, str] | None = None, run_id: str | None = None,
                       on_start: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run an LWIR workflow (a file path or an already-validated dict) to completion.

    Returns the RunResult `{runId, workflowVersionId, status, output, usage, artifacts}`;
    raises RunFailedError (with `cause_code`, `failed_step_path`) when the run fails.
    An existing `run_id` resumes that run instead of starting it twice.
    """
    from lwtool.runtime.interpreter import start_run
    from lwtool.world.local import local_world

    lwir = load_lwir(workflow) if isinstance(workflow, (str, Path)) else dict(workflow)
    return await start_run(world or local_world(), lwir, run_input, ToolRegistry.of(tools),
                           dict(models or {}), run_id, on_start)


async def replay_run(run_id: str, *, world: World | None = None,
                     tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                     models: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Resume a run from its event log; completed steps are never re-executed."""
    from lwtool.runtime.interpreter import resume_run
    from lwtool.world.local import local_world

    return await resume_run(world or local_world(), run_id, ToolRegistry.of(tools),
                            dict(models) if models is not None else None)

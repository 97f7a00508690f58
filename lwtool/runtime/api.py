"""The Python API: `run_workflow(...)` and `replay_run(...)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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


def checked_lwir(lwir: Mapping[str, Any]) -> dict[str, Any]:
    """Validate an LWIR document given as a Python mapping (raises WorkflowInvalid)."""
    import json

    from lwtool.source.finding import Severity
    from lwtool.source.loader import load_text
    from lwtool.validate.run import document_kind, validate_document

    document = load_text(json.dumps(lwir), "<lwir>.json")
    findings = validate_document(document)
    if document_kind(document) != "Workflow" or any(
            f.severity is Severity.ERROR for f in findings):
        raise WorkflowInvalid("<lwir>", findings)
    value: dict[str, Any] = document.value
    return value


@dataclass(frozen=True)
class LockedWorkflow:
    """A validated LWIR document and its WorkflowVersion id, computed once: pass it to
    `run_workflow` as often as you like (no validation or hashing per run). Made by
    `lock_workflow`; treat `lwir` as immutable (the id is its hash)."""

    lwir: dict[str, Any]
    version_id: str
    canonical: str | None = None  # the RFC 8785 text the id was taken over
    # the versions its workflow.invoke steps reach (id -> locked LWIR)
    children: Mapping[str, dict[str, Any]] = field(default_factory=dict)


def lock_workflow(workflow: str | Path | Mapping[str, Any]) -> LockedWorkflow:
    """Validate an LWIR file or dict and compute its WorkflowVersion id, its
    workflow.invoke children locked into it (files relative to the workflow's file, or
    to the current folder for a dict; raises WorkflowInvalid)."""
    from lwtool.canonical.digest import sha256_of_bytes
    from lwtool.canonical.jcs import canonical_bytes
    from lwtool.validate.children import load_child
    from lwtool.validate.invokes import ChildProblem, lock_children

    lwir = load_lwir(workflow) if isinstance(workflow, (str, Path)) else checked_lwir(workflow)
    folder = Path(workflow).parent if isinstance(workflow, (str, Path)) else Path.cwd()
    chain = (Path(workflow).resolve(),) if isinstance(workflow, (str, Path)) else ()
    try:
        locked = lock_children(lwir, folder, load_child, chain)
    except ChildProblem as problem:
        raise WorkflowInvalid(str(workflow) if isinstance(workflow, (str, Path))
                              else "<lwir>", [problem]) from None
    data = canonical_bytes(locked.lwir)  # once: for the id, and for the world to store
    return LockedWorkflow(locked.lwir, sha256_of_bytes(data), data.decode("utf-8"),
                          locked.children)


async def run_workflow(workflow: str | Path | Mapping[str, Any] | LockedWorkflow,
                       run_input: Any, *, world: World | None = None,
                       tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                       models: Mapping[str, str] | None = None, run_id: str | None = None,
                       on_start: Callable[[str], None] | None = None,
                       step_timeout: float | None = None, harness: Any = None,
                       durability: str | None = None,
                       timeout: float | None = None,
                       secrets: Any = None,
                       skills: Sequence[str | Path] = ()) -> dict[str, Any]:
    """Run an LWIR workflow: a file path or a dict (validated and hashed first), or a
    LockedWorkflow from `lock_workflow` (already both). (`lwtool.run_workflow` also
    takes a WorkflowDefinition: lwtool.planner.api.run_workflow.)

    Returns the RunResult `{runId, workflowVersionId, status, output, usage, artifacts,
    events}` (`events`: the run's event log, each as `lwtool events --json` prints it);
    raises RunFailedError (with `cause_code`, `failed_step_path`) when the run fails,
    and RunWaitingError (its `requests`) when it stops to wait for a person
    (`lwtool.respond` answers; `replay_run` goes on).
    An existing `run_id` resumes that run instead of starting it twice. `step_timeout`
    (seconds, default 300) bounds each step attempt: cause code `timeout`, retried by
    the step's retry policy like any transient failure. `harness` is the worker harness
    (an object with `harness_id` and `async run(task, ctx)`; default: the workflow
    harness, lwtool.harness.workflow.WorkflowHarness). `durability` is `strict` (every
    step result flushed to the disk: survives power loss) or `process` (survives any
    kill of the process; faster); default: the world's (strict unless it says).
    `timeout` (seconds) bounds the whole run: past it the run stops where it is and
    RunFailedError with cause `timeout` is raised (its `result` says how to go on); the
    run stays resumable with `replay_run`. `secrets` is where the values of the
    workflow's `permissions.secrets` come from: a mapping (name -> value), a dotenv
    file's path, or a lwtool.Secrets broker; default: the process environment.
    `skills` (skill folders, SKILL.md paths or `git+` URLs) are this run's worker skills
    (lwtool.harness.run_skills): SkillError before anything runs for one that is not.
    """
    from lwtool.capability.secrets import using
    from lwtool.harness.run_skills import with_run_skills
    from lwtool.record.ids import new_run_id
    from lwtool.runtime.interpreter import start_run
    from lwtool.world.local import local_world

    run_id = run_id or new_run_id()
    world = world or local_world()
    locked = workflow if isinstance(workflow, LockedWorkflow) else lock_workflow(workflow)
    workspace = with_run_skills(None, skills, Path(world.data_dir))
    with using(secrets):
        return with_events(world, await within(timeout, run_id, start_run(
            world, locked.lwir, run_input, ToolRegistry.of(tools),
            dict(models or {}), run_id, on_start, step_timeout, harness, workspace,
            durability=durability, version_id=locked.version_id,
            canonical=locked.canonical, children=dict(locked.children))))


def with_events(world: World, result: dict[str, Any]) -> dict[str, Any]:
    """The RunResult of the Python API: the CLI's, plus `events` (the run's event log,
    as `lwtool events --json` prints each)."""
    run_id = result.get("outerLoopId") or result.get("runId")
    return {**result, "events": [e.as_json() for e in world.events(str(run_id))]}


async def within(timeout: float | None, run_id: str, work: Any) -> dict[str, Any]:
    """Await `work` (a run), bounded by `timeout` seconds: cause `timeout` past it."""
    import asyncio

    from lwtool.record.errors import RunFailedError

    if timeout is None:
        result: dict[str, Any] = await work
        return result
    if not timeout > 0:
        work.close()
        raise ValueError(f"the run timeout must be more than 0 seconds, not {timeout}")
    try:
        async with asyncio.timeout(timeout):
            result = await work
            return result
    except TimeoutError:
        raise RunFailedError(run_id, "-", "timeout", f"the run took longer than {timeout:g} s "
                             "and was stopped where it was; resume it with replay_run",
                             result={"runId": run_id, "status": "interrupted",
                                     "causeCode": "timeout"}) from None


async def replay_run(run_id: str, *, world: World | None = None,
                     tools: ToolRegistry | Mapping[str, Callable[..., Any]] | None = None,
                     models: Mapping[str, str] | None = None,
                     step_timeout: float | None = None, harness: Any = None,
                     accept_drift: bool = False, secrets: Any = None) -> dict[str, Any]:
    """Resume a run from its event log; completed steps are never re-executed. The step
    timeout is the one the run started with unless `step_timeout` is given; the harness
    must be the one the run started with. `accept_drift` goes on although the tools'
    code, the models or the harness changed (recorded as CapabilityDriftAccepted).
    `secrets`: as for run_workflow (a secret the run needs and the broker lacks is
    refused before anything is written)."""
    from lwtool.capability.secrets import using
    from lwtool.runtime.interpreter import resume_run
    from lwtool.world.local import local_world

    world = world or local_world()
    with using(secrets):
        return with_events(world, await resume_run(
            world, run_id, ToolRegistry.of(tools),
            dict(models) if models is not None else None, None, step_timeout, harness,
            accept_drift))

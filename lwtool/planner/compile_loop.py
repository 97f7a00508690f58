"""The planner compile loop: a planner harness session drafts LWIR for an
OrchestrationRequest; each draft is checked (needs inference, then the validator)
and either locked as an immutable WorkflowVersion or sent back as compact findings,
until it is valid or `maxWorkflowRevisions` repairs are spent
(`planner_validation_exhausted`; every draft is kept as an artifact).

The session (role `planner`, its own run: `lwtool events` shows it) is offered one
tool, `submit_workflow`, whose parameters are the LWIR JSON Schema, plus bash over its
memory and scratch when a sandbox is available. It sees the tools of the request as
descriptions only and never runs them. Its model is the definition's planner model,
private to it: never one of the execution slots. A killed planning session resumes
without asking the model again for committed turns (the harness's durability);
byte-identical drafts collapse to one WorkflowVersion (its id is the canonical hash).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lwtool.calls.offline import OFFLINE_MODEL
from lwtool.calls.scripted import ScriptedModel
from lwtool.canonical.digest import workflow_version_id
from lwtool.harness.bash import BashOptions
from lwtool.harness.session import run_session
from lwtool.harness.session_spec import SESSION_PATH, SessionSpec
from lwtool.harness.stores import MemoryConfig
from lwtool.lock.version_record import version_meta
from lwtool.planner.grant import Grant, describe, excesses
from lwtool.planner.offline import offline_planner
from lwtool.planner.prompt import SUBMIT_TOOL, planner_system, request_message
from lwtool.planner.repair import check_draft, rejection
from lwtool.planner.request import OrchestrationRequest, RequestInvalid, build_request
from lwtool.record.errors import RunFailedError, StepFailure
from lwtool.record.ids import short_hash
from lwtool.record.run_state import DEFAULT_STEP_TIMEOUT
from lwtool.source.skill_source import located
from lwtool.tools import Tool, ToolRegistry
from lwtool.world.base import World

DEFAULT_MAX_REVISIONS = 3


@dataclass
class PlanResult:
    version_id: str
    lwir: dict[str, Any]
    planner_run_id: str
    drafts: int
    added_needs: list[dict[str, str]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)


async def plan_workflow(world: World, definition: dict[str, Any], run_input: Any,
                        tools: ToolRegistry, model: str | ScriptedModel, *,
                        run_id: str, skills_base: Path | None = None,
                        bash: BashOptions | None = None,
                        outer_loop: dict[str, Any] | None = None,
                        progress: Callable[[str], None] | None = None,
                        timeout: float = DEFAULT_STEP_TIMEOUT,
                        harness: Any = None, keep_scratch: bool = False,
                        pipeline_run: str | None = None,
                        links: dict[str, Any] | None = None,
                        budget: dict[str, Any] | None = None,
                        budget_root: str | None = None) -> PlanResult:
    """Draft, check and lock LWIR for `definition` and `run_input`. `run_id` names the
    planner session's run (an existing one resumes). `budget` ({maxTokens,
    maxCostUsd}) is held against every reply under `budget_root` (the run the plan is
    for, or its pipeline). `harness`: the definition's own
    planner harness (lwtool.planner.custom) instead of the built-in session.
    `keep_scratch`: the session's scratch stays for the run that follows (its workers'
    /mnt/scratch/from-planner; removed when that run ends). `pipeline_run`: the
    pipeline run it plans for (its scratch nests there); `links`: for RunStarted. Raises
    RunFailedError (input_schema_error, runtime_config_error,
    planner_validation_exhausted)."""
    say = progress or (lambda _: None)
    try:
        request = build_request(definition, run_input, tools, outer_loop, skills_base)
        if model == OFFLINE_MODEL:  # the offline model plans too: a fixed draft
            model = offline_planner(request)
    except RequestInvalid as exc:
        raise RunFailedError(run_id, "-", exc.cause, exc.message) from None
    planner = definition.get("planner") or {}
    max_revisions = int(planner.get("maxWorkflowRevisions", DEFAULT_MAX_REVISIONS))
    rejected = 0  # counted from every submit result, replayed ones too

    def finish(name: str, value: Any) -> bool:
        nonlocal rejected
        if name != SUBMIT_TOOL or not isinstance(value, dict):
            return False
        if value.get("accepted") is True:
            say(f"draft {rejected + 1} accepted: {value['workflowVersionId']}")
            return True
        if "findings" not in value:
            return False
        rejected += 1
        codes = ", ".join(sorted({f["code"] for f in value["findings"]}))
        say(f"draft {rejected} not valid ({len(value['findings'])} findings: {codes})")
        if rejected > max_revisions:
            raise StepFailure("planner_validation_exhausted",
                              f"no valid workflow after {rejected} drafts "
                              f"(maxWorkflowRevisions: {max_revisions}); each draft is kept "
                              "as an artifact (`lwtool events <planner run> --type "
                              "harness.tool_call.*`)", SESSION_PATH)
        return False

    grant = Grant.of(definition)
    if harness is not None:
        from lwtool.planner.custom import plan_with_harness

        say(f"planning {request.workflow_id} with planner.harness {harness.harness_id}")
        locked = await plan_with_harness(world, harness, request, grant, tools,
                                         max_revisions, model,
                                         planner_system(planner.get("system")), run_id)
        return PlanResult(locked[0], locked[1], run_id, locked[2])
    spec = SessionSpec(
        "planner", model, request_message(request), planner_system(planner.get("system")),
        max_turns=2 * (max_revisions + 1) + 10, workflow_id=request.workflow_id,
        memory=MemoryConfig.from_json(definition.get("memory")),
        skills=tuple(located(s, skills_base) for s in planner.get("skills") or ()),
        bash=bash, identity=_identity(request), keep_scratch=keep_scratch,
        pipeline_run=pipeline_run, links=dict(links or {}), budget=budget,
        budget_root=budget_root, name=f"{request.workflow_id} (planner)")
    say(f"planning {request.workflow_id} (planner run {run_id})")
    result = await run_session(world, spec,
                               ToolRegistry({SUBMIT_TOOL: submit_tool(world, grant, tools)}),
                               run_id=run_id, timeout=timeout, finish=finish)
    final = result.final
    if not isinstance(final, dict) or final.get("accepted") is not True:
        raise RunFailedError(run_id, "-", "planner_validation_exhausted",
                             "the planner answered without submitting a valid workflow "
                             f"(its last words: {result.text[:200]!r})")
    version_id = str(final["workflowVersionId"])
    lwir = world.get_version(version_id)
    assert lwir is not None, version_id
    over = excesses(lwir, grant)  # a version locked before its definition was narrowed
    if over:
        raise RunFailedError(run_id, version_id, "runtime_config_error",
                             f"the planned version asks for more than the definition "
                             f"grants: {describe(over)}")
    return PlanResult(version_id, lwir, run_id, rejected + 1,
                      list(final.get("addedNeeds") or []), result.usage)


def submit_tool(world: World, grant: Grant | None = None,
                tools: ToolRegistry | None = None) -> Tool:
    """`submit_workflow(<LWIR>)`: check the draft (inside `grant`, where given); lock it
    (with its record: its warnings and `tools`' surface), or return its findings."""

    async def submit_workflow(draft: Any) -> dict[str, Any]:
        data = json.dumps(draft, ensure_ascii=False, sort_keys=True).encode("utf-8")
        draft_ref = await world.put_artifact(data)
        check = check_draft(draft, grant)
        if not check.ok:
            return {**rejection(check), "draftRef": draft_ref}
        version_id = workflow_version_id(check.lwir)
        world.register_version(version_id, check.lwir, meta=lambda: version_meta(
            check.lwir, check.notes, None if tools is None else tools.tools))
        return {"accepted": True, "workflowVersionId": version_id, "draftRef": draft_ref,
                "addedNeeds": [{"step": a.step_id, "need": a.need} for a in check.added_needs]}

    from lwtool._resources import load_schema

    parameters = {k: v for k, v in load_schema("lwir.schema.json").items()
                  if k not in ("$schema", "$id", "title")}  # function parameters: the schema
    return Tool(SUBMIT_TOOL, submit_workflow,
                "Submit the complete LWIR workflow document. The result says whether it "
                "was accepted, or lists findings to fix before submitting again.",
                parameters)


def _identity(request: OrchestrationRequest) -> dict[str, Any]:
    identity: dict[str, Any] = {"workflowDefinitionHash": request.definition_hash}
    if request.outer_loop is not None:
        identity["outerLoopContextHash"] = short_hash(request.outer_loop)
    return identity

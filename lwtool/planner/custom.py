"""A definition's own planner harness (`planner.harness: MODULE:ATTR`, read relative to
the definition): a harness that handles PlanTask. It is given the OrchestrationRequest
(and, after a refused draft, `priorFindings`), the planner's model and system prompt,
and returns the LWIR draft as its output; lwtool checks each draft exactly as it checks
the built-in planner's (needs inference, the validator, the definition's grant) and
locks the first valid one, or fails `planner_validation_exhausted` after
`maxWorkflowRevisions` repairs. Each draft is kept as an artifact. A name that cannot
be loaded, or a harness that does not handle PlanTask, is `runtime_config_error`.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from lwtool.canonical.digest import workflow_version_id
from lwtool.harness.contract import HarnessContext, PlanTask
from lwtool.lock.version_record import version_meta
from lwtool.planner.grant import Grant
from lwtool.planner.repair import check_draft
from lwtool.planner.request import OrchestrationRequest
from lwtool.record.errors import RunFailedError, StepFailure
from lwtool.tools import ToolRegistry
from lwtool.world.base import World


def load_planner_harness(spec: str, run_id: str) -> Any:
    """The harness a definition's `planner.harness` names (already made relative)."""
    from lwtool.harness.workflow import HarnessNotLoadable, load_harness

    try:
        return load_harness(spec)
    except HarnessNotLoadable as exc:
        raise RunFailedError(run_id, "-", "runtime_config_error",
                             f"planner.harness: {exc}") from None


async def plan_with_harness(world: World, harness: Any, request: OrchestrationRequest,
                            grant: Grant, tools: ToolRegistry, max_revisions: int,
                            model: Any, system: str, run_id: str
                            ) -> tuple[str, dict[str, Any], int]:
    """(version id, LWIR, drafts) of the first valid draft the harness returns; its
    version is recorded as checked against `tools` (the definition's)."""
    findings: list[dict[str, Any]] = []
    for draft_number in range(1, max_revisions + 2):
        task = PlanTask({**request.as_json(), **({"priorFindings": findings} if findings
                                                  else {})})
        try:
            result = await harness.run(task, HarnessContext(recorder=None,
                                                            tools=ToolRegistry(),
                                                            model=model, system=system))
        except StepFailure as exc:
            raise RunFailedError(run_id, "-", "runtime_config_error",
                                 f"planner.harness {harness.harness_id}: {exc.message}") \
                from None
        draft = getattr(result, "output", None)
        data = json.dumps(draft, ensure_ascii=False, sort_keys=True, default=str)
        await world.put_artifact(data.encode("utf-8"))
        check = check_draft(draft, grant)
        if check.ok:
            version_id = workflow_version_id(check.lwir)
            world.register_version(version_id, check.lwir, meta=partial(
                version_meta, check.lwir, check.notes, tools.tools))
            return version_id, check.lwir, draft_number
        findings = check.findings
    raise RunFailedError(run_id, "-", "planner_validation_exhausted",
                         f"no valid workflow from planner.harness {harness.harness_id} after "
                         f"{max_revisions + 1} drafts (maxWorkflowRevisions: {max_revisions}); "
                         f"the last draft's findings: "
                         + "; ".join(f"{f['pointer']}: {f['code']}" for f in findings[:5]))

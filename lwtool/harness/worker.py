"""The worker role of a definition run: its system prompt (skills listed, then the
definition's `worker.system`) and the manifest fields every step shares (skills hash,
memory stores). Computed once per run and kept in the run's memo. A plain LWIR run has
no worker role: the workspace (bash, stores, skills) is imported for a definition's."""

from __future__ import annotations

from typing import Any

from lwtool.record.errors import StepFailure


def worker_system(run: Any) -> str:
    """The worker's system prompt before each ai.generate step's own (the spec's "the
    model sees the step as"): its skills listed (a definition's worker skills and the
    org's), then the definition's `worker.system`. Empty for LWIR run without a
    definition. Raises StepFailure when a skill cannot be read."""
    found = run.memo.get("worker_system")
    if found is None:
        from lwtool.harness.skills import skills_prompt

        parts = [skills_prompt(worker_skills(run)), str(run.workspace.get("system") or "")]
        found = run.memo["worker_system"] = "\n\n".join(part for part in parts if part)
    return str(found)


def worker_skills(run: Any) -> list[Any]:
    """A definition's worker skills and the run's own (`--skill`), with the org's (none
    for a plain LWIR run given none)."""
    found = run.memo.get("worker_skills")
    if found is None:
        found = []
        if run.workspace.get("workflowId") is not None or run.workspace.get("skills"):
            from lwtool.harness.skills import SkillError
            from lwtool.harness.workspace import StepWorkspace

            try:
                found = StepWorkspace.of_run(run, "").resolved_skills()[0]
            except SkillError as exc:
                raise StepFailure("runtime_config_error", f"worker skills: {exc}") from None
        run.memo["worker_skills"] = found
    return list(found)


def worker_identity(run: Any, path: str) -> dict[str, Any]:
    """A definition run's worker manifest fields: skills hash and memory stores (the
    same for every step; laid out once, at the first step `path` asking)."""
    if run.workspace.get("workflowId") is None and not run.workspace.get("skills"):
        return {}
    found = run.memo.get("worker_identity")
    if found is None:
        from lwtool.harness.skills import skills_hash
        from lwtool.harness.workspace import StepWorkspace

        found = run.memo["worker_identity"] = {
            "skills_hash": skills_hash(worker_skills(run)),
            # a plain LWIR run given skills (`--skill`) has no workflow memory store
            **({"memory_store_ids": StepWorkspace.of_run(run, path).store_ids()}
               if run.workspace.get("workflowId") is not None else {})}
    return dict(found)

"""What a run is called wherever a workflow's name is shown (`lwtool runs`, the
inspector, an OTel trace's root span): the name recorded with it (a pipeline's id for
its orchestrator session, `ID (planner)` for a planner session), else its LWIR's
`metadata.name`, else, for a session recorded before names were, its role and the
workflow it serves."""

from __future__ import annotations

from typing import Any

SESSION_KIND = "HarnessSession"  # lwtool.harness.session_spec's subject kind


def run_name(version: dict[str, Any] | None, recorded: Any = None) -> str:
    if isinstance(recorded, str) and recorded:
        return recorded
    version = version if isinstance(version, dict) else {}
    metadata = version.get("metadata")
    if isinstance(metadata, dict) and metadata.get("name"):
        return str(metadata["name"])
    if version.get("kind") == SESSION_KIND:
        role, serves = version.get("role") or "session", version.get("workflowId")
        return f"{serves} ({role})" if serves else str(role)
    return str(version.get("kind") or "?")

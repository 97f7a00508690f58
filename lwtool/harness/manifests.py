"""Role manifests: what a session depends on, stored in `harness.session.started`,
computed again on resume and compared field by field (any difference is
CapabilityDriftError, `capability_drift`, before anything runs).

The spec's fields per role:
- planner: harnessId, plannerModelSlotId, systemPromptHash, skillsHash,
  workflowDefinitionHash, globalToolsHash, bashCapabilitiesHash, memoryStoreIds,
  outerLoopContextHash (when in an outer loop)
- orchestrator: harnessId, orchestratorModelSlotId, systemPromptHash, skillsHash,
  availableWorkflows, globalToolsHash, bashCapabilitiesHash, memoryStoreIds,
  maxConcurrentSubRuns
- worker: harnessId, workflowDefinitionHash, workflowVersionId, stepPath,
  stepConfigHash, modelSlotId?, systemPromptHash?, skillsHash, allowedToolsHash,
  bashCapabilitiesHash, memoryStoreIds
- fixer: the worker's, plus fixerModelSlotId, fixerSystemHash, fixerMaxAttempts
- agent (a standalone session, lwtool's own): harnessId, modelSlotId,
  systemPromptHash, skillsHash, allowedToolsHash, bashCapabilitiesHash,
  memoryStoreIds
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lwtool.record.ids import short_hash

# Fields a caller supplies per role (the rest come from the session itself).
ROLE_FIELDS: dict[str, tuple[str, ...]] = {
    "planner": ("workflowDefinitionHash",),
    "orchestrator": ("availableWorkflows", "maxConcurrentSubRuns"),
    "worker": ("workflowDefinitionHash", "workflowVersionId", "stepPath", "stepConfigHash"),
    "fixer": ("workflowDefinitionHash", "workflowVersionId", "stepPath", "stepConfigHash",
              "fixerMaxAttempts"),
    "agent": (),
}
OPTIONAL_FIELDS = {"outerLoopContextHash", "modelSlotId", "systemPromptHash"}
NO_BASH = short_hash(None)


@dataclass(frozen=True)
class SessionCapabilities:
    """What every role's manifest pins of its session."""

    harness_id: str
    model_slot: str
    system: str
    skills_hash: str
    tools_hash: str
    bash_hash: str
    memory_store_ids: list[str]


def role_manifest(role: str, caps: SessionCapabilities,
                  identity: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of `role`; `identity` holds the role's own fields (ROLE_FIELDS)."""
    identity = dict(identity or {})
    missing = [key for key in ROLE_FIELDS[role] if key not in identity]
    unknown = set(identity) - set(ROLE_FIELDS[role]) - OPTIONAL_FIELDS
    if missing or unknown:
        raise ValueError(f"a {role} manifest needs {', '.join(ROLE_FIELDS[role]) or 'no'} "
                         f"fields (missing: {', '.join(missing) or '-'}; unknown: "
                         f"{', '.join(sorted(unknown)) or '-'})")
    common = {"harnessId": caps.harness_id, "systemPromptHash": short_hash(caps.system),
              "skillsHash": caps.skills_hash, "bashCapabilitiesHash": caps.bash_hash,
              "memoryStoreIds": list(caps.memory_store_ids)}
    if role == "planner":
        return {**common, "plannerModelSlotId": caps.model_slot,
                "globalToolsHash": caps.tools_hash, **identity}
    if role == "orchestrator":
        return {**common, "orchestratorModelSlotId": caps.model_slot,
                "globalToolsHash": caps.tools_hash, **identity}
    if role == "fixer":
        return {**common, "allowedToolsHash": caps.tools_hash,
                "fixerModelSlotId": caps.model_slot,
                "fixerSystemHash": short_hash(caps.system), **identity}
    return {**common, "modelSlotId": caps.model_slot, "allowedToolsHash": caps.tools_hash,
            **identity}


def worker_manifest(harness_id: str, version_id: str, step_path: str, step_config_hash: str,
                    tools_hash: str, definition_hash: str | None = None,
                    model_slot: str | None = None, system: str | None = None,
                    skills_hash: str = "", memory_store_ids: list[str] | None = None
                    ) -> dict[str, Any]:
    """A worker step's manifest: a definition's run passes its hash, the worker skills'
    hash and the memory stores a worker mounts (a plain LWIR run has none of them)."""
    manifest: dict[str, Any] = {
        "harnessId": harness_id, "workflowDefinitionHash": definition_hash,
        "workflowVersionId": version_id, "stepPath": step_path,
        "stepConfigHash": step_config_hash, "skillsHash": skills_hash or EMPTY_SKILLS,
        "allowedToolsHash": tools_hash, "bashCapabilitiesHash": NO_BASH,
        "memoryStoreIds": list(memory_store_ids or [])}
    if model_slot is not None:
        manifest["modelSlotId"] = model_slot
        manifest["systemPromptHash"] = short_hash(system or "")
    return manifest


def drift(recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The fields that differ between a recorded manifest and the one computed now."""
    return sorted(key for key in set(recorded) | set(expected)
                  if recorded.get(key) != expected.get(key))


EMPTY_SKILLS = short_hash([])

"""WorkflowDefinitionHash: the identity of a definition, stable across runs.

WorkflowDefinitionHash = sha256(canonicalJson(WorkflowDefinitionSnapshot)), where the
snapshot holds the identity-bearing fields only (schemas and prompts by hash).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lwtool.canonical.digest import (
    folder_digest,
    sha256_of_bytes,
    sha256_of_json,
    workflow_version_id,
)
from lwtool.source.skill_source import is_git

DEFAULT_HARNESS = "lwtool/workflow-harness@1"


def slot_id(slot: dict[str, Any]) -> str:
    """A model slot's id: given, else the model name after its last '/'."""
    given = slot.get("id")
    if isinstance(given, str) and given:
        return given
    model = slot.get("model")
    return model.rsplit("/", 1)[-1] if isinstance(model, str) else ""


def _text_hash(text: Any) -> str | None:
    return sha256_of_bytes(text.encode("utf-8")) if isinstance(text, str) else None


def _schema_hash(holder: Any) -> str | None:
    if isinstance(holder, dict) and "schema" in holder:
        return sha256_of_json(holder["schema"])
    return None


def skills_identity(skills: Any, base: Path | None) -> list[str]:
    """Skills by content (a digest of each local skill folder, read relative to the
    definition's folder `base`), so a moved skill keeps the hash and an edited one
    changes it; `git+` sources by their URL (pin a commit for content identity).
    Without `base` (a definition not read from a file) the sources themselves."""
    sources = [s for s in skills or [] if isinstance(s, str)]
    if base is None:
        return sorted(sources)
    identities = []
    for source in sources:
        if is_git(source):
            identities.append(source)
            continue
        folder = base / source
        folder = folder.parent if folder.name == "SKILL.md" else folder
        try:
            identities.append(folder_digest(folder))
        except (OSError, ValueError):
            identities.append(f"unreadable:{source}")
    return sorted(identities)


def definition_snapshot(definition: dict[str, Any], base: Path | None = None) -> dict[str, Any]:
    planner = definition.get("planner") or {}
    worker = definition.get("worker") or {}
    models = [
        {"id": slot_id(m), "model": m.get("model"), "description": m.get("description")}
        for m in definition.get("models") or () if isinstance(m, dict)
    ]
    return {
        "id": definition.get("id"),
        "description": definition.get("description"),
        "inputSchemaHash": _schema_hash(definition.get("input")),
        "outputSchemaHash": _schema_hash(definition.get("output")),
        "modelSlots": models,
        "plannerConfig": {
            "modelSlotId": planner.get("model"),
            "harnessId": planner.get("harness", DEFAULT_HARNESS),
            "systemHash": _text_hash(planner.get("system")),
            "skillsHash": sha256_of_json(skills_identity(planner.get("skills"), base)),
            "plan": planner.get("plan"),
            "maxWorkflowRevisions": planner.get("maxWorkflowRevisions"),
            **({"maxCodeSandbox": planner["maxCodeSandbox"]}  # absent: every setting deny
               if planner.get("maxCodeSandbox") else {}),
        },
        "workerConfig": {
            "harnessId": worker.get("harness", DEFAULT_HARNESS),
            "systemHash": _text_hash(worker.get("system")),
            "skillsHash": sha256_of_json(skills_identity(worker.get("skills"), base)),
        },
        "globalTools": sorted(definition.get("tools") or []),
        "memoryConfig": definition.get("memory") or {"workflow": "rw", "org": "ro"},
    }


def definition_hash(definition: dict[str, Any], base: Path | None = None) -> str:
    """`base`: the definition file's folder (skills are hashed by content from there)."""
    return sha256_of_json(definition_snapshot(definition, base))


def digest_of(kind: str, value: Any, base: Path | None = None) -> str:
    """WorkflowVersion id, WorkflowDefinitionHash (skills read relative to `base`), or a
    Pipeline's hash (its document's, RFC 8785; its definitions have locks of their own)."""
    if kind in ("Workflow", "Pipeline"):
        return workflow_version_id(value)
    return definition_hash(value, base)

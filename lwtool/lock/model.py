"""The version lock: what `lwtool lock` writes beside a file and `lwtool check` compares."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwtool.authoring.snapshot import definition_hash
from lwtool.canonical.digest import workflow_version_id

LOCK_VERSION = 1
LOCK_KIND = "WorkflowVersionLock"


@dataclass(frozen=True)
class Lock:
    source: str
    document_kind: str
    digest: str  # WorkflowVersion id (LWIR) or WorkflowDefinitionHash (definition)
    name: str | None
    version: str | None
    models: tuple[str, ...]
    tools: tuple[str, ...]
    generator: str | None = None  # MODULE:ATTR that `lwtool generate` wrote it from
    children: tuple[tuple[str, str], ...] = ()  # (invoke step pointer, child version id)

    @property
    def digest_field(self) -> str:
        return {"Workflow": "workflowVersionId", "Pipeline": "pipelineHash"}.get(
            self.document_kind, "workflowDefinitionHash")

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": LOCK_KIND,
            "lockVersion": LOCK_VERSION,
            "source": self.source,
            "documentKind": self.document_kind,
            self.digest_field: self.digest,
            "name": self.name,
            "version": self.version,
            "models": list(self.models),
            "tools": list(self.tools),
            **({"generator": self.generator} if self.generator else {}),
            **({"children": dict(self.children)} if self.children else {}),
        }


def lock_for(path: str | Path, kind: str, value: dict[str, Any],
             locked: Any = None) -> Lock:
    """The lock of a valid document (deterministic: no timestamps, so re-locking an
    unchanged file changes nothing in the repository). `locked`: an LWIR file's
    lwtool.validate.invokes.Locked (its version id covers its children's, each recorded
    by the pointer of the step that invokes it)."""
    if kind == "Workflow":
        from lwtool.validate.invokes import child_ref, child_sites, site_key

        metadata = value.get("metadata") or {}
        permissions = value.get("permissions") or {}
        lwir = locked.lwir if locked is not None else value
        children = tuple((site_key(pointer), ref) for pointer, holder in child_sites(lwir)
                         if (ref := child_ref(holder)) is not None)
        return Lock(Path(path).name, kind, workflow_version_id(lwir), metadata.get("name"),
                    metadata.get("version"), tuple(permissions.get("models") or ()),
                    tuple(permissions.get("tools") or ()), children=children)
    if kind == "Pipeline":
        model = (value.get("orchestrator") or {}).get("model")
        return Lock(Path(path).name, kind, workflow_version_id(value), value.get("id"), None,
                    (str(model),), ())
    models = tuple(str(m.get("model")) for m in value.get("models") or () if isinstance(m, dict))
    return Lock(Path(path).name, kind, definition_hash(value, Path(path).parent),
                value.get("id"), None, models,
                tuple(value.get("tools") or ()))


"""The front-end pipeline as one call: load, validate, canonicalize, hash."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lwtool.source.finding import Finding, Severity
from lwtool.source.loader import Document
from lwtool.validate.run import document_kind, load_and_validate

if TYPE_CHECKING:
    from lwtool.validate.invokes import Locked


@dataclass
class Compiled:
    """A file after the front end. `ok` means it loaded and has no error findings."""

    path: str
    document: Document | None
    kind: str | None
    findings: list[Finding]
    _locked: Locked | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return self.document is not None and self.kind is not None and not any(
            f.severity is Severity.ERROR for f in self.findings)

    @property
    def value(self) -> Any:
        return self.document.value if self.document else None

    def canonical(self) -> bytes:
        from lwtool.canonical.jcs import canonical_bytes

        return canonical_bytes(self.value)

    def digest(self) -> str:
        """WorkflowVersion id (LWIR: covering its children's) or WorkflowDefinitionHash
        (definition)."""
        from lwtool.authoring.snapshot import digest_of

        assert self.kind is not None
        if self.kind == "Workflow":
            return self.locked().version_id
        return digest_of(self.kind, self.value, Path(self.path).parent)

    def locked(self) -> Locked:
        """A valid LWIR file with its `workflow.invoke` children locked (read once):
        the LWIR a run executes, its version id, and every child version it reaches."""
        if self._locked is None:
            from lwtool.validate.children import load_child
            from lwtool.validate.invokes import lock_children

            assert self.kind == "Workflow", self.kind
            path = Path(self.path)
            self._locked = lock_children(self.value, path.parent, load_child,
                                         (path.resolve(),))
        return self._locked


def compile_file(path: str | Path) -> Compiled:
    """Load and validate one file. Raises OSError when it cannot be read at all."""
    document, findings = load_and_validate(path)
    kind = document_kind(document) if document is not None else None
    return Compiled(str(path), document, kind, findings)


def compile_text(text: str, path: str) -> Compiled:
    """Load and validate text as the file `path` would be (its name picks YAML or
    JSON; a definition's relative files are read beside it)."""
    from lwtool.source.loader import LoadFailed, load_text
    from lwtool.validate.run import validate_document

    try:
        document = load_text(text, path)
    except LoadFailed as failed:
        return Compiled(path, None, None, failed.findings)
    return Compiled(path, document, document_kind(document), validate_document(document))

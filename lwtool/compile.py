"""The front-end pipeline as one call: load, validate, canonicalize, hash."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lwtool.source.finding import Finding, Severity
from lwtool.source.loader import Document
from lwtool.validate.run import document_kind, load_and_validate


@dataclass
class Compiled:
    """A file after the front end. `ok` means it loaded and has no error findings."""

    path: str
    document: Document | None
    kind: str | None
    findings: list[Finding]

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
        """WorkflowVersion id (LWIR) or WorkflowDefinitionHash (definition)."""
        from lwtool.authoring.snapshot import digest_of

        assert self.kind is not None
        return digest_of(self.kind, self.value, Path(self.path).parent)


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

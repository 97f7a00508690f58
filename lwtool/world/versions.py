"""Reading back a WorkflowVersion and its record, as every world stores them: the LWIR
as its RFC 8785 text (verified against its id on read: a version is immutable) and
the record (lwtool.lock.version_record) as a JSON object beside it."""

from __future__ import annotations

from typing import Any

from lwtool.canonical.compact import loads
from lwtool.world.base import StoreDamaged


def intact_version(text: Any, version_id: str, where: str) -> dict[str, Any]:
    """The LWIR of a stored version's text, verified against its id: the hash of the
    text (its canonical form), else (a store that kept another form) of the value read
    back, canonicalized. StoreDamaged when neither matches."""
    from lwtool.canonical.digest import sha256_of_bytes, workflow_version_id

    try:
        lwir: dict[str, Any] = loads(text)
        intact = (sha256_of_bytes(text.encode("utf-8")) == version_id
                  or workflow_version_id(lwir) == version_id)
    except (ValueError, TypeError, AttributeError):
        intact = False
    if not intact:
        raise StoreDamaged(f"WorkflowVersion {version_id} in {where} is damaged "
                           "(its LWIR no longer hashes to its id)")
    return lwir


def version_record(text: Any, version_id: str, where: str) -> dict[str, Any]:
    """A stored version record: a JSON object, else StoreDamaged."""
    try:
        value = loads(text)
    except (ValueError, TypeError) as exc:
        raise StoreDamaged(f"the record of WorkflowVersion {version_id} in {where} is "
                           f"damaged: {exc}") from None
    if not isinstance(value, dict):
        raise StoreDamaged(f"the record of WorkflowVersion {version_id} in {where} is "
                           "damaged: it is not a JSON object")
    return value

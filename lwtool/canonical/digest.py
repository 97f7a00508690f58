"""Content hashes: `sha256:<64 hex>` of canonical JSON."""

from __future__ import annotations

import hashlib
from typing import Any

from lwtool.canonical.jcs import canonical_bytes

PREFIX = "sha256:"


def sha256_of_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def sha256_of_json(value: Any) -> str:
    """The hash of a JSON value's RFC 8785 form; the WorkflowVersion id of an LWIR."""
    return sha256_of_bytes(canonical_bytes(value))


def workflow_version_id(lwir: Any) -> str:
    """WorkflowVersion = sha256(canonicalJson(LWIR))."""
    return sha256_of_json(lwir)

"""Content hashes: `sha256:<64 hex>` of canonical JSON."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from lwtool.canonical.jcs import canonical_bytes

PREFIX = "sha256:"


def sha256_of_bytes(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def text_pin(text: str) -> str:
    """The pin of a code.run file: `sha256:` + SHA-256 of its content as UTF-8."""
    return sha256_of_bytes(text.encode("utf-8", "surrogatepass"))


def sha256_of_json(value: Any) -> str:
    """The hash of a JSON value's RFC 8785 form; the WorkflowVersion id of an LWIR."""
    return sha256_of_bytes(canonical_bytes(value))


def workflow_version_id(lwir: Any) -> str:
    """WorkflowVersion = sha256(canonicalJson(LWIR))."""
    return sha256_of_json(lwir)


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes (a skill's content identity);
    `.git` is skipped. Raises ValueError for a symlink inside, OSError when unreadable."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*")
                       if ".git" not in p.relative_to(folder).parts):
        if path.is_symlink():
            raise ValueError(f"{path}: skills hold plain files and folders, not symlinks")
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return PREFIX + digest.hexdigest()

"""Read and write lock files (`<name>.lock.json`), atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from lwtool.lock.model import LOCK_KIND, Lock


class LockUnreadable(ValueError):
    """The lock file exists but is not a valid lwtool lock."""


def write_lock(path: Path, lock: Lock) -> None:
    text = json.dumps(lock.as_json(), indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_lock(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LockUnreadable(f"cannot read lock {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != LOCK_KIND:
        raise LockUnreadable(f"{path} is not an lwtool lock (kind must be {LOCK_KIND})")
    digest = data.get("workflowVersionId") or data.get("workflowDefinitionHash")
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise LockUnreadable(f"{path} has no sha256 digest")
    return data


def locked_digest(data: dict[str, Any]) -> str:
    return str(data.get("workflowVersionId") or data.get("workflowDefinitionHash"))

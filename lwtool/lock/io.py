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


class LockNotWritable(OSError):
    """The lock file cannot be written there; the message says why."""


def write_lock(path: Path, lock: Lock) -> None:
    """Write atomically, with the mode a new file of the user's would get (the lock is
    committed beside its workflow). Raises LockNotWritable."""
    write_text_atomically(path, json.dumps(lock.as_json(), indent=2, ensure_ascii=False)
                          + "\n", "the lock")


def write_text_atomically(path: Path, text: str, what: str = "the file") -> None:
    """Temp file in the same folder, fsync, rename: readers see the old file or the new
    one, never a part. Raises LockNotWritable (an OSError) with the reason."""
    if path.is_dir():
        raise LockNotWritable(f"cannot write {what} {path}: a folder has that name")
    try:
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise LockNotWritable(f"cannot write {what} {path}: {exc.strerror or exc} "
                              f"(in {path.parent})") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise LockNotWritable(f"cannot write {what} {path}: {exc.strerror or exc}") from None
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
    digest = locked_digest(data)
    if not isinstance(digest, str) or not digest.startswith("sha256:"):
        raise LockUnreadable(f"{path} has no sha256 digest")
    return data


def locked_digest(data: dict[str, Any]) -> str:
    return str(data.get("workflowVersionId") or data.get("workflowDefinitionHash")
               or data.get("pipelineHash") or "")

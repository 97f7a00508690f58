"""A run's lock file: held while a process executes the run; the OS drops it when the
process dies, so a killed run can be replayed at once."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lwtool.world.base import RunLocked, WorldError, check_run_id


@contextmanager
def hold_run_lock(locks: Path, run_id: str) -> Iterator[None]:
    """Hold the run's lock while executing it. The OS drops it when the process dies,
    so a killed run can be replayed at once; a live holder makes this raise.

    The lock file is removed when the lock is let go (one file a run would pile up in
    `locks/`); a killed holder's stays until the run's next holder lets go of it.
    Whoever removes it holds its lock, so a process that locked the file just as it
    was removed finds it gone from its path, and opens and locks the path again."""
    path = locks / f"{check_run_id(run_id)}.lock"
    fd = _locked(path, run_id)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        try:
            os.unlink(path)  # while held: the next holder makes the file anew
        except OSError:  # removed behind lwtool's back, or not ours to remove: left
            pass
        finally:
            os.close(fd)


def _locked(path: Path, run_id: str) -> int:
    """A descriptor of the lock file at `path`, its lock taken; RunLocked when a live
    process holds it."""
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:  # a symlink (ELOOP), a folder, no permission
            raise WorldError(f"cannot open the lock file {path} of run {run_id}: "
                             f"{exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunLocked(f"run {run_id} is being executed by another process "
                            f"(pid {holder})") from None
        except BaseException:
            os.close(fd)
            raise
        if _still_at(fd, path):
            return fd
        os.close(fd)  # its holder removed it as it let go: lock the path's file anew


def _still_at(fd: int, path: Path) -> bool:
    """Whether the open file is the one at `path` (not one removed since it was opened)."""
    try:
        at_path = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (at_path.st_dev, at_path.st_ino)


def holder_alive(locks: Path, run_id: str) -> bool:
    """Whether a live process holds the run's lock, from the pid its holder wrote (read
    only: taking the lock to find out could refuse a process starting the run)."""
    try:
        pid = int((locks / f"{check_run_id(run_id)}.lock").read_text(encoding="utf-8")
                  .strip() or "0")
    except (OSError, ValueError, WorldError):
        return False
    return pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's live process counts)."""
    if pid <= 0:  # os.kill(0, ...) would ask about this process's group instead
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

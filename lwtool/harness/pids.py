"""A cap on the number of processes a bash command may make (a fork bomb stops at the
cap), through a pids cgroup of its own where this process may create one (cgroup v1
`pids` hierarchy or a cgroup v2 folder with the pids controller; root in a container,
or a delegated subtree). RLIMIT_NPROC would not do: root is exempt from it. Where no
pids cgroup is writable the command's time limit is the bound, and `available()`
says so.
"""

from __future__ import annotations

import os
import signal
import time
from functools import cache
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")


@cache
def _parent() -> Path | None:
    """A cgroup folder under which this process can make a pids-limited child."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            candidates.append(CGROUP_FS / "pids" / path.lstrip("/"))
        elif controllers == "" and (CGROUP_FS / "cgroup.controllers").exists():
            candidates.append(CGROUP_FS / path.lstrip("/"))
    for parent in candidates:
        probe = parent / f"lwtool-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        usable = (probe / "pids.max").exists()
        probe.rmdir()
        if usable:
            return parent
    return None


def available() -> bool:
    return _parent() is not None


class PidsLimit:
    """One command's cgroup: `procs` is the file its first process writes `0` to (joining
    it before exec); `close()` kills whatever is left in it and removes it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs = folder / "cgroup.procs"

    @classmethod
    def create(cls, limit: int) -> PidsLimit | None:
        parent = _parent()
        if parent is None:
            return None
        folder = parent / f"lwtool-bash-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            folder.mkdir()
            (folder / "pids.max").write_text(str(limit))
        except OSError:
            return None
        return cls(folder)

    def close(self) -> None:
        deadline = time.monotonic() + 5
        while True:
            try:
                pids = [int(p) for p in self.procs.read_text().split()]
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.folder.rmdir()
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # an empty cgroup left behind is harmless
                time.sleep(0.01)

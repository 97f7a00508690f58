"""Caps on what a bash command may take as a whole: the number of processes (a fork
bomb stops at the cap) and memory (every process of the command together), through
cgroups of its own where this process may create them (cgroup v1 `pids` and `memory`
hierarchies, or a cgroup v2 folder with those controllers; root in a container, or a
delegated subtree). RLIMIT_NPROC would not do: root is exempt from it. Where no pids
cgroup is writable the command's time limit is the bound, and `available()` says so;
where no memory cgroup is, the caller falls back to a per-process RLIMIT_AS.
"""

from __future__ import annotations

import os
import signal
import time
from functools import cache
from pathlib import Path

CGROUP_FS = Path("/sys/fs/cgroup")


# controller -> (its limit file in cgroup v1, in cgroup v2)
LIMIT_FILES = {"pids": ("pids.max", "pids.max"),
               "memory": ("memory.limit_in_bytes", "memory.max")}


@cache
def _parent(controller: str = "pids") -> tuple[Path, str] | None:
    """A cgroup folder under which this process can make a child limited by
    `controller`, and the limit file's name there."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    v1, v2 = LIMIT_FILES[controller]
    candidates = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            candidates.append((CGROUP_FS / controller / path.lstrip("/"), v1))
        elif controllers == "" and (CGROUP_FS / "cgroup.controllers").exists():
            candidates.append((CGROUP_FS / path.lstrip("/"), v2))
    for parent, limit_file in candidates:
        probe = parent / f"lwtool-probe-{os.getpid()}"
        try:
            probe.mkdir()
        except OSError:
            continue
        usable = (probe / limit_file).exists()
        probe.rmdir()
        if usable:
            return parent, limit_file
    return None


def available(controller: str = "pids") -> bool:
    return _parent(controller) is not None


class PidsLimit:
    """One command's cgroups (pids, and memory where it can be had): `procs` are the
    files its first process writes `0` to (joining them before exec); `close()` kills
    whatever is left in them and removes them."""

    def __init__(self, folders: list[Path], limits_memory: bool = False) -> None:
        self.folders = folders
        self.procs = [folder / "cgroup.procs" for folder in folders]
        self.limits_memory = limits_memory

    @classmethod
    def create(cls, limit: int, memory_bytes: int | None = None) -> PidsLimit | None:
        """None where no pids cgroup can be made (then no memory one is made either)."""
        wanted = [("pids", limit)] + ([("memory", memory_bytes)] if memory_bytes else [])
        folders: list[Path] = []
        limited: set[str] = set()
        name = f"lwtool-bash-{os.getpid()}-{os.urandom(4).hex()}"
        for controller, value in wanted:
            found = _parent(controller)
            if found is None:
                continue
            parent, limit_file = found
            folder = parent / name
            try:
                if not folder.is_dir():
                    folder.mkdir()
                    folders.append(folder)
                (folder / limit_file).write_text(str(value))
                limited.add(controller)
            except OSError:
                continue
        made = cls(folders, "memory" in limited)
        if "pids" not in limited:
            made.close()
            return None
        return made

    @property
    def join(self) -> str:
        """The procs files, space-separated, for the joining shell."""
        return " ".join(str(p) for p in self.procs)

    def close(self) -> None:
        for folder in self.folders:
            _empty_and_remove(folder)


def _empty_and_remove(folder: Path) -> None:
    deadline = time.monotonic() + 5
    while True:
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            folder.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # an empty cgroup left behind is harmless
            time.sleep(0.01)

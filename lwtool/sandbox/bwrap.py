"""Bubblewrap, as the bash tool and code.run both use it: whether it can make its
namespaces here, the arguments that unshare every namespace as an unprivileged user,
and the host's system folders read-only."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache

SANDBOX_UID = "1000"


@cache
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot sandbox a command here (None when it can)."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt install bubblewrap)"
    probe = subprocess.run(["bwrap", *namespace_args(), "--ro-bind", "/usr", "/usr",
                            *system_args(), "/usr/bin/true"],
                           capture_output=True, text=True, timeout=30, check=False)
    if probe.returncode != 0:
        return f"bubblewrap cannot create its sandbox here: {probe.stderr.strip()}"
    return None


def namespace_args() -> list[str]:
    return ["--unshare-all", "--unshare-user", "--uid", SANDBOX_UID, "--gid", SANDBOX_UID,
            "--disable-userns", "--cap-drop", "ALL"]


def system_args() -> list[str]:
    """/bin, /lib... as on the host (symlinks into /usr on merged-/usr systems)."""
    args: list[str] = []
    for path in ("/bin", "/lib", "/lib32", "/lib64", "/sbin"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args + ["--ro-bind-try", "/etc/alternatives", "/etc/alternatives"]

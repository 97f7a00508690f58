"""What ties a command run on the host (path-check bash, Deno without the bubblewrap
wall) to lwtool and keeps lwtool's own process out of its sight.

- `die_with_parent`: a preexec hook giving the child PR_SET_PDEATHSIG(SIGKILL): it is
  killed when lwtool dies, even by SIGKILL.
- `host_wrapper()`: as root, `unshare --pid --fork --kill-child --mount-proc`: the
  command gets a PID namespace and a /proc of its own (lwtool's process and its
  environment are not there), and every process in it dies with its first one.
- `hide_own_process()`: otherwise PR_SET_DUMPABLE(0) on lwtool: a process of the same
  user can no longer read /proc/<lwtool>/environ or attach to it.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
from functools import cache

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


@cache
def _prctl() -> object | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> None:
    """preexec_fn: SIGKILL this child when its parent (lwtool) dies."""
    prctl = _prctl()
    if prctl is not None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # type: ignore[operator]


@cache
def host_wrapper() -> tuple[str, ...]:
    """The argv prefix that gives a host command its own PID namespace and /proc (root
    only; empty where it cannot be had)."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        return ()
    wrapper = (unshare, "--pid", "--fork", "--kill-child", "--mount-proc")
    probe = subprocess.run([*wrapper, "/bin/true"], capture_output=True, timeout=30,
                           check=False)
    return wrapper if probe.returncode == 0 else ()


def hide_own_process() -> bool:
    """Make lwtool's /proc entries unreadable to other processes of its user; True when
    that is in force (it cannot hide anything from root)."""
    prctl = _prctl()
    if prctl is None:
        return False
    done = prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0  # type: ignore[operator]
    return bool(done) and os.geteuid() != 0

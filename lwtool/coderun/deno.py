"""The Deno binary: `LWTOOL_DENO` if set, else the one the `deno` PyPI package ships,
else `deno` on PATH."""

from __future__ import annotations

import os
import shutil
from functools import cache

DENO_ENV = "LWTOOL_DENO"


class DenoMissing(Exception):
    """No Deno binary: the message says how to get one."""


@cache
def deno_binary() -> str:
    configured = os.environ.get(DENO_ENV)
    if configured:
        if not os.access(configured, os.X_OK):
            raise DenoMissing(f"{DENO_ENV}={configured} is not an executable file")
        return configured
    try:
        import deno

        found = str(deno.find_deno_bin())
        if os.access(found, os.X_OK):
            return found
    except (ImportError, FileNotFoundError, OSError):
        pass
    on_path = shutil.which("deno")
    if on_path:
        return on_path
    raise DenoMissing("code.run needs Deno: `pip install deno` (a dependency of lwtool), "
                      f"or set {DENO_ENV} to a deno binary")


def deno_cache_dir() -> str:
    """Deno's cache for `deno check` (type-checking runs no code), kept per user outside
    any sandbox mount. code.run executions never use it: each has a DENO_DIR of its own."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "lwtool", "deno")

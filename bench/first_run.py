"""The README's main command as a new user meets it: `bash scripts/demo.sh` in a fresh
clone of this repository's HEAD with empty package caches (uv's and pip's), then again
warm. Prints each run's wall time and the longest stretch in which it printed nothing
(it says what it does before each slow part). Needs the package index (network); goal
for the cold run: at most 60 s.

Run: .venv/bin/python bench/first_run.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_demo(clone: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of `bash scripts/demo.sh` in `clone`, and the longest silence."""
    started = last = time.perf_counter()
    silent = 0.0
    with subprocess.Popen(["bash", "scripts/demo.sh"], cwd=clone, env=env, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as demo:
        assert demo.stderr is not None
        for _ in demo.stderr:
            now = time.perf_counter()
            silent, last = max(silent, now - last), now
    if demo.returncode != 0:
        sys.exit(f"scripts/demo.sh failed with exit code {demo.returncode}")
    ended = time.perf_counter()
    return ended - started, max(silent, ended - last)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "lwtool"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "UV_CACHE_DIR": str(Path(tmp) / "uv-cache"),
               "PIP_NO_CACHE_DIR": "1"}
        env.pop("VIRTUAL_ENV", None)
        for label in ("cold (fresh clone, empty caches)", "warm (the same clone again)"):
            wall, silent = timed_demo(clone, env)
            print(f"scripts/demo.sh, {label}: {wall:.1f} s wall, longest silence "
                  f"{silent:.1f} s  (goal for the cold run: <= 60 s)")


if __name__ == "__main__":
    main()

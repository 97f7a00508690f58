"""How long a pre-commit hook's environment takes to build: a new venv and
`pip install <this repository>` (what pre-commit does for `language: python`), with an
empty pip cache, for the base install (validate, check, lsp) and with the `run` extra.
Needs the package index (network); goal for the base: under 20 s.

Run: .venv/bin/python bench/precommit.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(target: str) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        venv.create(tmp, with_pip=True)
        python = str(Path(tmp) / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-cache-dir", target],
                       check=True, cwd=ROOT)
        elapsed = time.perf_counter() - started
        check = subprocess.run([str(Path(tmp) / "bin" / "lwtool"), "check", "examples"],
                               cwd=ROOT, capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit(f"lwtool check failed in the new environment: {check.stderr}")
        return elapsed


def main() -> None:
    base = build(".")
    print(f"hook environment, base install (validate, check, lsp): {base:.1f} s "
          "(goal < 20 s)")
    full = build(".[run]")
    print(f"with the run extra (litellm, deno, orjson, aiofiles): {full:.1f} s")


if __name__ == "__main__":
    main()

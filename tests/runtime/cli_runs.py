"""Driving `lwtool` on a test folder's data dir in the running test's world (local or
PostgreSQL): the commands, the calls a test tool logged, a run's events."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

from tests.conftest import Worlds, run_cli

# A test tool module (`tools.py:tools`): `step(args)` logs `args["name"]` to calls.log,
# fails while a `break-<name>` file exists, and returns `<value>-<name>`.
LOGGING_TOOLS = '''\
import os
from pathlib import Path

def step(args):
    here = Path(os.environ["LWTOOL_TEST_DIR"])
    with open(here / "calls.log", "a") as log:
        log.write(args["name"] + "\\n")
    if (here / f"break-{args['name']}").exists():
        raise RuntimeError(f"{args['name']} is broken")
    return {"value": f"{args['value']}-{args['name']}"}

tools = {"step": step}
'''


def lwtool(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`lwtool ARGS --data-dir data` in `folder`, LWTOOL_TEST_DIR set to it."""
    world = Worlds.current().env(folder / "data")
    return run_cli(*args, "--data-dir", "data", cwd=folder,
                   env={**world, "LWTOOL_TEST_DIR": str(folder), **env})


def calls(folder: Path) -> Counter[str]:
    """The names a test tool wrote to calls.log, counted."""
    return Counter((folder / "calls.log").read_text().split())


def events(folder: Path, run_id: str) -> list[dict[str, Any]]:
    """A run's events as `lwtool events --json` prints them."""
    return [json.loads(line) for line in lwtool(folder, "events", run_id, "--json")
            .stdout.splitlines()]

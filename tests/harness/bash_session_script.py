"""A harness session with the bash tool, run as its own process for SIGKILL tests:
`python bash_session_script.py DATA_DIR RUN_ID`. Two turns each run one bash command
that appends its key to /mnt/memory/workflow/calls.log (the side-effect counter); when
the workflow store holds `block-<key>`, the command writes `blocked-<key>` and sleeps
(a process inside the sandbox, which must die with the session's process)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from lwtool import local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.bash import BashOptions
from lwtool.harness.session import run_session
from lwtool.harness.session_spec import SessionSpec

MARKER_SECONDS = 3601  # `sleep 3601`: the test looks for this process after the kill


def step(key: str) -> dict[str, Any]:
    store = os.environ.get("LWTOOL_TEST_STORE", "/mnt/memory/workflow")  # path-check: host path
    command = (f"echo {key} >> {store}/calls.log; if [ -e {store}/block-{key} ]; then "
               f"touch {store}/blocked-{key}; sleep {MARKER_SECONDS}; fi; echo {key.upper()}")
    return {"toolCalls": [{"name": "bash", "arguments": {"command": command}}]}


def final(messages: list[dict[str, Any]]) -> str:
    seen = [json.loads(m["content"])["stdout"].strip() for m in messages if m["role"] == "tool"]
    return "ran: " + ",".join(seen)


MODEL = ScriptedModel([step("a"), step("b"), final])

if __name__ == "__main__":
    data_dir, run_id = sys.argv[1], sys.argv[2]
    result = asyncio.run(run_session(local_world(data_dir), SessionSpec(
        "agent", MODEL, "Run a then b.", workflow_id="wf", bash=BashOptions.from_env()),
        run_id=run_id))
    print(json.dumps(result.as_json()))

"""A harness session run as its own process, for SIGKILL tests: `python session_script.py
DATA_DIR RUN_ID`. Three turns: the model asks for two `note` calls, then one, then
answers. Every tool call and every model reply appends to $LWTOOL_TEST_DIR/calls.log
(the side-effect counter); $LWTOOL_TEST_BLOCK names a tool call key (`a`, `b`, `c`) or
a model turn (`turn-1`, `turn-2`, `turn-3`) that writes `blocked-<name>` and hangs."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from lwtool import ToolRegistry, local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.session import run_session
from lwtool.harness.session_spec import SessionSpec

FOLDER = Path(os.environ.get("LWTOOL_TEST_DIR", "."))


def _count(key: str) -> None:
    with open(FOLDER / "calls.log", "a", encoding="utf-8") as fh:
        fh.write(f"{key}\n")
        fh.flush()
        os.fsync(fh.fileno())
    if os.environ.get("LWTOOL_TEST_BLOCK") == key.split(":")[1]:
        (FOLDER / f"blocked-{key.split(':')[1]}").write_text(str(os.getpid()))
        time.sleep(3600)


tools = ToolRegistry()


@tools.tool(description="Write a note; returns it upper-cased.")
def note(args: dict[str, Any]) -> dict[str, Any]:
    _count(f"tool:{args['key']}")
    return {"key": args["key"], "upper": args["key"].upper()}


def reply(turn: int, body: Any) -> Any:
    def answer(messages: list[dict[str, Any]]) -> Any:
        _count(f"model:turn-{turn}")
        if callable(body):
            return body(messages)
        return body
    return answer


def final(messages: list[dict[str, Any]]) -> str:
    seen = [json.loads(m["content"])["upper"] for m in messages if m["role"] == "tool"]
    return "notes: " + ",".join(seen)


MODEL = ScriptedModel([
    reply(1, {"toolCalls": [{"name": "note", "arguments": {"key": "a"}},
                            {"name": "note", "arguments": {"key": "b"}}]}),
    reply(2, {"toolCalls": [{"name": "note", "arguments": {"key": "c"}}]}),
    reply(3, final),
])

if __name__ == "__main__":
    data_dir, run_id = sys.argv[1], sys.argv[2]
    result = asyncio.run(run_session(local_world(data_dir), SessionSpec(
        "agent", MODEL, "Write notes a, b and c."), tools, run_id=run_id))
    print(json.dumps(result.as_json()))

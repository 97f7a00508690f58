"""Run the test pipeline in its own process (so a test can SIGKILL it): argv = data dir,
run id. The model's turns and the tool's calls are logged to LWTOOL_TEST_LOG; the tool
blocks on n == LWTOOL_TEST_BLOCK."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path

from lwtool import local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.orchestrate.api import orchestrate
from lwtool.orchestrate.pipeline import load_pipeline
from tests.orchestrate.helpers import Doubler, env_log, last_result, logged


def main() -> None:
    data, run_id = Path(sys.argv[1]), sys.argv[2]
    log = env_log()
    block = os.environ.get("LWTOOL_TEST_BLOCK")
    doubler = Doubler(log, block=int(block) if block else None)

    def run_all(messages: list[dict]) -> dict:
        version = last_result(messages)["workflowVersionId"]
        return {"toolCalls": [{"name": "run_workflow", "arguments": {
            "workflowVersionId": version, "input": {"n": n}}} for n in (1, 2, 3, 4)]}

    model = ScriptedModel([
        logged(log, "turn0", {"toolCalls": [{"name": "plan_workflow", "arguments": {
            "workflowId": "double", "input": {"n": 1}}}]}),
        logged(log, "turn1", run_all),
        logged(log, "turn2", "done"),
    ])
    pipeline = load_pipeline(data.parent / "numbers.pipeline.yaml")
    pipeline = dataclasses.replace(pipeline, model=model)
    result = asyncio.run(orchestrate(pipeline, {"numbers": [1, 2, 3, 4]},
                                     world=local_world(data), tools=doubler.registry(),
                                     run_id=run_id))
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""A pipeline of two definitions with fixed plans (`double`, `square`) whose tool can be
slowed, logged and blocked, for the orchestrator's tests and the kill script."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

from lwtool import ToolRegistry

DOUBLE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Workflow
metadata: {name: double}
input:
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
permissions: {tools: [double]}
steps:
  - id: twice
    uses: tool.call
    with: {tool: double, args: {n: "{{ input.n }}"}}
"""
DEFINITION = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: double
description: Doubles a number.
input:
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
tools: [double]
planner: {plan: double.lwir.yaml}
"""
PLANNED = """\
apiVersion: littleworkflow.dev/v0.1
kind: WorkflowDefinition
id: square
description: Squares a number.
input:
  schema: {type: object, required: [n], properties: {n: {type: integer}}}
output:
  schema: {type: object}
tools: [double]
models: [{id: fast, model: offline}]
planner: {model: planner}
"""
PIPELINE = """\
apiVersion: littleworkflow.dev/v0.1
kind: Pipeline
id: numbers
description: Double every number.
workflows: [double.definition.yaml]
orchestrator: {model: orchestrator, maxConcurrentSubRuns: 2}
"""


def write_pipeline(folder: Path) -> Path:
    (folder / "double.lwir.yaml").write_text(DOUBLE)
    (folder / "double.definition.yaml").write_text(DEFINITION)
    (folder / "square.definition.yaml").write_text(PLANNED)
    (folder / "numbers.pipeline.yaml").write_text(PIPELINE)
    return folder / "numbers.pipeline.yaml"


def double_version(folder: Path) -> str:
    from lwtool.canonical.digest import workflow_version_id
    from lwtool.runtime.api import load_lwir

    return workflow_version_id(load_lwir(folder / "double.lwir.yaml"))


class Doubler:
    """The `double` tool: logs each call to `log`, sleeps `delay`, tracks how many run
    at once, and blocks forever on n == `block` (after writing `blocked-<n>`)."""

    def __init__(self, log: Path | None = None, delay: float = 0.0,
                 block: int | None = None) -> None:
        self.log, self.delay, self.block = log, delay, block
        self.active = self.peak = 0

    async def double(self, args: dict[str, Any]) -> dict[str, Any]:
        n = int(args["n"])
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(f"tool:{n}\n")
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if n == self.block:
                (self.log.parent if self.log else Path(".")).joinpath(
                    f"blocked-{n}").write_text("")
                await asyncio.sleep(3600)
            await asyncio.sleep(self.delay)
        finally:
            self.active -= 1
        return {"value": 2 * n}

    def registry(self) -> ToolRegistry:
        tools = ToolRegistry()
        tools.register("double", self.double, "Doubles n.")
        return tools


def logged(log: Path | None, label: str, reply: Any) -> Any:
    """A scripted reply that notes it was asked (model:<label>) in `log`."""
    def answer(messages: list[dict[str, Any]]) -> Any:
        if log is not None:
            with open(log, "a") as fh:
                fh.write(f"model:{label}\n")
        return reply(messages) if callable(reply) else reply
    return answer


def last_result(messages: list[dict[str, Any]]) -> Any:
    return json.loads(messages[-1]["content"])


def env_log() -> Path | None:
    value = os.environ.get("LWTOOL_TEST_LOG")
    return Path(value) if value else None

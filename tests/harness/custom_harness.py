"""A custom worker harness for tests: runs code.run steps whose entrypoint is Python
(`async def run(input, tools)`) in this process, with a tools proxy whose calls are
recorded with `caller: "code"`. It shows the plug-in point (one class, one method
overridden); it is not a sandbox."""

from __future__ import annotations

from typing import Any

from lwtool.calls.tool_calls import call_tool
from lwtool.harness.contract import ExecuteStepTask, HarnessContext, HarnessResult
from lwtool.harness.workflow import WorkflowHarness


class PythonCodeHarness(WorkflowHarness):
    harness_id = "tests/python-code-harness@1"

    async def execute_code_run(self, task: ExecuteStepTask, ctx: HarnessContext) -> HarnessResult:
        with_ = task.step["with"]
        namespace: dict[str, Any] = {}
        exec(with_["files"][with_["entrypoint"]]["content"], namespace)  # noqa: S102
        calls = 0

        async def tool(name: str, args: Any) -> Any:
            nonlocal calls
            call_id = f"{task.step_path}#code.{calls}"
            calls += 1
            found = ctx.tools.get(name)
            assert found is not None, name
            return await call_tool(ctx.recorder, task.step_path, found, args, "code", call_id)

        output = await namespace["run"](task.step_input, tool)
        return HarnessResult("execute_step", output)


class BashCodeHarness(WorkflowHarness):
    """Runs code.run steps whose entrypoint is a bash script, in the worker's sandbox
    (`ctx.workspace.bash()`): its own step scratch rw, the other steps' scratch and the
    memory stores ro. The step's output is the script's stdout."""

    harness_id = "tests/bash-code-harness@1"

    async def execute_code_run(self, task: ExecuteStepTask, ctx: HarnessContext) -> HarnessResult:
        with_ = task.step["with"]
        result = await ctx.workspace.bash().run(with_["files"][with_["entrypoint"]]["content"])
        if result["exitCode"] != 0:
            raise RuntimeError(result["stderr"])
        return HarnessResult("execute_step", result["stdout"])

"""A pipeline's own orchestrator harness (`orchestrator.harness: file.py:ATTR`), as the
other three roles have theirs: its `run(OrchestrateTask, ctx)` composes the workflows
through ctx.call (plan_workflow, run_workflow), each call recorded and, on a second
run of the same id, answered from the log; its harness_id is the session manifest's;
one that cannot be loaded is runtime_config_error. The default harness answers every
task kind (an orchestrate task with the model's agent loop, a plan task with a draft)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lwtool import ToolRegistry, local_world
from lwtool.calls.scripted import ScriptedModel
from lwtool.harness.contract import HarnessContext, PlanTask
from lwtool.harness.workflow import WorkflowHarness
from tests.conftest import run_cli
from tests.orchestrate.helpers import PIPELINE, write_pipeline

HARNESS = '''\
from pathlib import Path

from lwtool.harness.contract import HarnessResult


class Composer:
    harness_id = "test/composer@1"

    async def run(self, task, ctx):
        with open(Path(__file__).parent / "runs.log", "a") as log:
            log.write("run\\n")
        numbers = task.request["input"]["numbers"]
        planned = await ctx.call("plan_workflow", {"workflowId": "double",
                                                   "input": {"n": numbers[0]}}, "compose#plan")
        sums = []
        for n in numbers:
            done = await ctx.call("run_workflow", {
                "workflowVersionId": planned["workflowVersionId"], "input": {"n": n}},
                f"compose#run{n}")
            sums.append(done["status"])
        return HarnessResult("orchestrate", {"statuses": sums})


composer = Composer()
'''


def test_a_pipeline_composes_its_workflows_with_its_own_harness(tmp_path: Path) -> None:
    write_pipeline(tmp_path)
    (tmp_path / "composer.py").write_text(HARNESS)
    (tmp_path / "tools.py").write_text('tools = {"double": lambda a: {"value": a["n"] * 2}}\n')
    (tmp_path / "numbers.pipeline.yaml").write_text(PIPELINE.replace(
        "orchestrator: {model: orchestrator,",
        "orchestrator: {model: orchestrator, harness: 'composer.py:composer',"))
    (tmp_path / "in.json").write_text('{"numbers": [1, 2, 3]}')
    args = ["orchestrate", "numbers.pipeline.yaml", "-i", "in.json", "--offline", "--tools",
            "tools.py:tools", "--data-dir", "d", "--run-id", "p", "--json"]
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert json.loads(result["output"]) == {"statuses": ["completed"] * 3}
    assert [s["status"] for s in result["subRuns"]] == ["completed"] * 3
    assert result["toolCalls"] == 4
    world = local_world(tmp_path / "d")
    started = world.events("p", ["harness.session.started"])[0].payload
    assert started["manifest"]["harnessId"] == "test/composer@1"
    again = run_cli(*args, cwd=tmp_path)  # finished: answered from the log
    assert json.loads(again.stdout)["output"] == result["output"]
    assert (tmp_path / "runs.log").read_text() == "run\n"
    (tmp_path / "numbers.pipeline.yaml").write_text(PIPELINE.replace(
        "orchestrator: {model: orchestrator,",
        "orchestrator: {model: orchestrator, harness: 'composer.py:nobody',"))
    refused = run_cli(*args[:-3], "--run-id", "q", cwd=tmp_path)
    assert refused.returncode != 0 and "orchestrator.harness:" in refused.stderr, \
        refused.stderr


def test_the_default_harness_answers_a_plan_task() -> None:
    draft = {"apiVersion": "littleworkflow.dev/v0.1", "kind": "Workflow",
             "metadata": {"name": "x"}, "steps": []}
    model = ScriptedModel([json.dumps(draft)])
    answered = asyncio.run(WorkflowHarness().run(
        PlanTask({"workflowId": "x", "goal": "nothing"}),
        HarnessContext(recorder=None, tools=ToolRegistry(), model=model, system="Plan.")))
    assert (answered.kind, answered.output) == ("plan", draft)
    assert '"workflowId": "x"' in model.calls[0][-1]["content"]

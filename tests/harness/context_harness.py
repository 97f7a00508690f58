"""A custom worker harness for tests: it records what its HarnessContext carries
(model, system, mounts, bash, skills) in $LWTOOL_TEST_DIR/context.json and answers each
ai.generate step with $HARNESS_ANSWER (JSON), right or wrong for the step's output."""

from __future__ import annotations

import json
import os
from pathlib import Path

from lwtool.harness.contract import ExecuteStepTask, HarnessContext, HarnessResult
from lwtool.harness.workflow import WorkflowHarness


class ContextHarness(WorkflowHarness):
    harness_id = "tests/context-harness@1"

    async def execute_ai_generate(self, task: ExecuteStepTask,
                                  ctx: HarnessContext) -> HarnessResult:
        seen = {"model": ctx.model, "system": ctx.system, "mounts": ctx.mounts,
                "bash": ctx.bash, "skills": ctx.skills}
        peers = Path(ctx.mounts["/mnt/scratch/peer-steps"]["source"])
        seen["peerOutputs"] = {p.parent.name: json.loads(p.read_text())
                               for p in peers.glob("*/output.json")}
        planner = ctx.mounts.get("/mnt/scratch/from-planner")
        if planner is not None:  # what the planner left in its scratch, as workers see it
            folder = Path(planner["source"])
            seen["fromPlanner"] = sorted(p.name for p in folder.iterdir()) \
                if folder.is_dir() else None
        Path(os.environ["LWTOOL_TEST_DIR"], "context.json").write_text(json.dumps(seen))
        return HarnessResult("execute_step", json.loads(os.environ["HARNESS_ANSWER"]))


harness = ContextHarness()

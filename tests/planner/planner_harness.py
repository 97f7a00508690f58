"""A definition's own planner harness for tests: it answers each PlanTask with a draft
from $PLANNER_DRAFTS (a JSON list, one per call) and logs each task's request to
$LWTOOL_TEST_DIR/plan-tasks.jsonl."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lwtool.harness.contract import HarnessContext, HarnessResult, PlanTask


class ListPlanner:
    harness_id = "tests/list-planner@1"

    def __init__(self) -> None:
        self.calls = 0

    async def run(self, task: Any, ctx: HarnessContext) -> HarnessResult:
        assert isinstance(task, PlanTask)
        with open(Path(os.environ["LWTOOL_TEST_DIR"]) / "plan-tasks.jsonl", "a") as log:
            log.write(json.dumps({"request": task.request, "system": ctx.system[:40],
                                  "model": ctx.model}) + "\n")
        drafts = json.loads(os.environ["PLANNER_DRAFTS"])
        draft = drafts[min(self.calls, len(drafts) - 1)]
        self.calls += 1
        return HarnessResult("plan", draft)

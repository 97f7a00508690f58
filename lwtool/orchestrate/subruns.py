"""The orchestrator's three tools over one pipeline run, with the spec's return shapes:

- `plan_workflow(workflowId, input) -> {workflowVersionId, summary}`: the workflow's
  planner in its own session (run `<pipeline run>.plan.<call>`); the same workflow
  planned again for the same input in this pipeline run returns the version already
  planned (content-addressed: an identical LWIR is one WorkflowVersion anyway).
- `run_workflow(workflowVersionId, input) -> {runId, outputRef, outputPath,
  outputSummary, status}`: a sub-run (its own event log and per-step memoization)
  under the id the call reserved in its `harness.tool_call.started` (`args.$lwtool`);
  the model gets compact metadata, the full output is at `outputPath` (the
  orchestrator's scratch, `/mnt/scratch/own/outputs/<subRunId>.json`) and `outputRef`.
- `start_workflow(workflowId, input) -> {workflowVersionId, runId, output, status}`:
  plan, then run.

Sub-runs run concurrently (a model turn's calls are dispatched together), at most
`maxConcurrentSubRuns` at once and `maxSubRuns` in all (a call past it is refused).
Ids derive from the call id, so a call re-dispatched after a kill reserves the same
ones: its planner session and its sub-run resume from their own logs. An unknown
workflow or version, or an input its definition's input schema refuses, fails the call
(the model is told), never the session.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lwtool.orchestrate.pipeline import Available, Pipeline
from lwtool.record.ids import PLANNER, RESERVED, SUB_RUN, reservation, reserved_ids
from lwtool.tools import Refused, Tool, ToolRegistry
from lwtool.world.base import RunNotFound, World

SUMMARY_CHARS = 200
TOOL_NAMES = PLAN, RUN, START = ("plan_workflow", "run_workflow", "start_workflow")
OUTPUTS = "outputs"  # in the orchestrator's own scratch
_ID = {"type": "string"}
PLAN_SCHEMA = {"type": "object", "required": ["workflowId", "input"],
               "properties": {"workflowId": _ID, "input": {}}}
RUN_SCHEMA = {"type": "object", "required": ["workflowVersionId", "input"],
              "properties": {"workflowVersionId": _ID, "input": {}}}


def tool_name(workflow_id: str) -> str:
    """A workflow id as a tool name (letters, digits, `_` and `-`; at most 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", workflow_id)[:64]


class CallRefused(Refused):
    """A call the orchestrator got wrong; its message is what the model reads."""


class SubRuns:
    """The tools of the pipeline run `run_id` (the orchestrator's session run)."""

    def __init__(self, world: World, pipeline: Pipeline, run_id: str, tools: ToolRegistry,
                 models: Mapping[str, str], step_timeout: float | None = None,
                 planner_model: Any = None,
                 progress: Callable[[str], None] | None = None,
                 budget: dict[str, Any] | None = None, depth: int = 0,
                 depth_limit: int | None = None,
                 nest: Callable[..., Any] | None = None) -> None:
        self.world, self.pipeline, self.run_id = world, pipeline, run_id
        self.depth = depth  # how deep this pipeline run nests under others (0: the top)
        # the deepest a nested pipeline may go: the least maxDepth of those it is under
        self.depth_limit = min(pipeline.max_depth, depth_limit or pipeline.max_depth)
        self.nest = nest  # runs a nested pipeline (lwtool.orchestrate.api.orchestrate)
        self.budget = budget  # the pipeline's: every planner session and sub-run shares it
        self.tools, self.models = tools, dict(models)
        self.step_timeout, self.planner_model = step_timeout, planner_model
        self.say = progress or (lambda _: None)
        self.gate = asyncio.Semaphore(pipeline.max_concurrent_sub_runs)
        self.active = self.peak = 0
        # (workflowId, input hash) -> version; version -> (workflowId, planner run)
        self.plans: dict[tuple[str, str], str] = {}
        self.versions: dict[str, tuple[str, str]] = {}
        # the sub-runs started so far (a resumed run's too): at most maxSubRuns
        self.started = {row["runId"] for row in sub_runs(world, run_id)}
        self._recall()

    def registry(self) -> ToolRegistry:
        """The three tools (to offer with the global tools)."""
        return ToolRegistry({tool.name: tool for tool in (
            Tool(PLAN, self.plan_workflow, "Plan one workflow of the pipeline "
                 "for a representative input; returns a workflowVersionId to run many "
                 "times with run_workflow.", PLAN_SCHEMA, reserve=self._reserving(PLANNER)),
            Tool(RUN, self.run_workflow, "Run a planned workflowVersionId on an "
                 "input as a sub-run; returns its runId, status, a short outputSummary and "
                 "outputPath (the whole output, readable with bash).", RUN_SCHEMA,
                 reserve=self._reserving(SUB_RUN, spec=True)),
            Tool(START, self.start_workflow, "Plan and run one workflow on one "
                 "input (for batches: plan_workflow once, then run_workflow many times).",
                 PLAN_SCHEMA, reserve=self._reserving(PLANNER, SUB_RUN, spec=True)))})

    def workflow_tools(self) -> ToolRegistry:
        """Each workflow as a tool of its own (create_harness): named by its id, its
        description, its input schema as parameters; a call plans the workflow once per
        session (the first call's input) and runs it as a sub-run, its ids reserved
        under RESERVED in the logged arguments."""
        registry = ToolRegistry()
        for workflow in self.pipeline.workflows:
            schema = (workflow.definition.get("input") or {}).get("schema")
            registry.tools[tool_name(workflow.id)] = Tool(
                tool_name(workflow.id), functools.partial(self.call_workflow, workflow),
                str(workflow.definition.get("description") or f"Run {workflow.id}."),
                schema if isinstance(schema, dict) else {"type": "object"},
                reserve=self._reserving(PLANNER, SUB_RUN))
        return registry

    async def call_workflow(self, workflow: Available, args: dict[str, Any]) -> dict[str, Any]:
        ids = args[RESERVED]
        value = {k: v for k, v in args.items() if k != RESERVED}
        self._admit(workflow, value, ids["subRunId"])
        key = (workflow.id, "")  # planned once per session, for the first call's input
        version_id = self.plans.get(key)
        if version_id is None:
            version_id = await self._plan(workflow, value, str(ids["plannerRunId"]))
            self.plans[key] = version_id
        result = await self._run(workflow, version_id, self.versions[version_id][1], value,
                                 ids["subRunId"], ids["callId"])
        return {"runId": result["runId"], "status": result["status"],
                "output": result.get("output"),
                **({"error": result["error"]} if "error" in result else {})}

    # -- the tools ------------------------------------------------------------------------

    async def plan_workflow(self, args: dict[str, Any]) -> dict[str, Any]:
        workflow = self._workflow(args.get("workflowId"))
        version_id = await self._plan(workflow, args.get("input"),
                                      args[RESERVED]["plannerRunId"])
        return {"workflowVersionId": version_id,
                "summary": f"{workflow.id} planned as {version_id}"}

    async def run_workflow(self, args: dict[str, Any]) -> dict[str, Any]:
        version_id = args.get("workflowVersionId")
        known = self.versions.get(str(version_id))
        if known is None:
            raise CallRefused(f"unknown workflowVersionId {version_id!r}: plan it in this "
                              "pipeline run first (plan_workflow)")
        workflow = self._workflow(known[0])
        ids = args[RESERVED]
        self._admit(workflow, args.get("input"), ids["subRunId"])
        result = await self._run(workflow, str(version_id), known[1], args.get("input"),
                                 ids["subRunId"], ids["callId"])
        return {key: result.get(key) for key in
                ("runId", "outputRef", "outputPath", "outputSummary", "status",
                 *(("error",) if "error" in result else ()))}

    async def start_workflow(self, args: dict[str, Any]) -> dict[str, Any]:
        workflow = self._workflow(args.get("workflowId"))
        ids = args[RESERVED]
        self._admit(workflow, args.get("input"), ids["subRunId"])
        version_id = await self._plan(workflow, args.get("input"), ids["plannerRunId"])
        result = await self._run(workflow, version_id, self.versions[version_id][1],
                                 args.get("input"), ids["subRunId"], ids["callId"])
        return {"workflowVersionId": version_id, "runId": result["runId"],
                "output": result.get("output"), "status": result["status"],
                **({"error": result["error"]} if "error" in result else {})}

    # -- reservations: ids from the call id, logged in harness.tool_call.started ----------

    def _reserving(self, *kinds: str, spec: bool = False) -> Callable[[Any, str], Any]:
        """A tool's `reserve`: the call's ids of `kinds` under RESERVED (what the caller
        wrote there was taken away before the call: lwtool's ids are lwtool's). `spec`:
        the spec's orchestrator tools, whose `harness.tool_call.started` reserves
        `args.subRunId` itself: the derived id is written there too, over whatever a
        model wrote (every reader checks it against the derivation)."""
        def reserve(args: Any, call_id: str) -> Any:
            if not isinstance(args, dict):
                return args
            ids = reservation(self.run_id, call_id, *kinds)
            top = {SUB_RUN: ids[SUB_RUN]} if spec and SUB_RUN in ids else {}
            return {**args, **top, RESERVED: ids}
        return reserve

    def _admit(self, workflow: Available, value: Any, sub_run: str) -> None:
        """Check the call's input, then count `sub_run` against maxSubRuns, or refuse
        the call past it. Done before the call's first wait, so a turn's calls are
        admitted in their order; a call re-dispatched after a kill was admitted before."""
        self._check_input(workflow, value)
        if sub_run not in self.started and len(self.started) >= self.pipeline.max_sub_runs:
            raise CallRefused(f"this pipeline run has started its {len(self.started)} "
                              f"sub-runs (maxSubRuns {self.pipeline.max_sub_runs}): no more "
                              "are started; answer with what they returned")
        self.started.add(sub_run)

    # -- planning and running -------------------------------------------------------------

    def _workflow(self, workflow_id: Any) -> Available:
        found = self.pipeline.workflow(workflow_id)
        if found is None:
            known = ", ".join(w.id for w in self.pipeline.workflows)
            raise CallRefused(f"unknown workflowId {workflow_id!r} (this pipeline has: "
                              f"{known})")
        return found

    def _check_input(self, workflow: Available, value: Any) -> None:
        schema = (workflow.definition.get("input") or {}).get("schema")
        if not isinstance(schema, dict):
            return
        import jsonschema

        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(value))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "(the input)"
            raise CallRefused(f"the input does not fit {workflow.id}'s input schema at "
                              f"{where}: {error.message}")

    async def _plan(self, workflow: Available, value: Any, planner_run: str) -> str:
        from lwtool.planner.api import definition_models, plan_definition
        from lwtool.record.ids import short_hash

        self._check_input(workflow, value)
        key = (workflow.id, short_hash(value))
        if key in self.plans:
            return self.plans[key]
        if workflow.nested is not None:  # a nested pipeline is run as it is, not planned
            self.plans[key] = workflow.hash
            self.versions[workflow.hash] = (workflow.id, "")
            return workflow.hash
        planner = workflow.definition.get("planner") or {}
        if planner.get("plan"):  # a fixed plan is locked as written
            version_id = self._lock_fixed(workflow, str(planner["plan"]))
        else:
            self.say(f"planning {workflow.id} (planner run {planner_run})")
            models = {**definition_models(workflow.definition), **self.models}
            planned = await plan_definition(
                self.world, workflow.folder, workflow.definition, value, self.tools, models,
                planner_run, self.step_timeout, planner_model=self.planner_model,
                keep_scratch=True, pipeline_run=self.run_id,
                links={"parentRunId": self.run_id}, budget=self.budget,
                budget_root=self.run_id)
            version_id = planned.version_id
        self.plans[key] = version_id
        self.versions[version_id] = (workflow.id, planner_run)
        return version_id

    def _lock_fixed(self, workflow: Available, plan: str) -> str:
        from lwtool.canonical.digest import workflow_version_id
        from lwtool.runtime.api import checked_lwir, load_lwir

        lwir = checked_lwir(load_lwir(workflow.folder / plan))
        version_id = workflow_version_id(lwir)
        self.world.register_version(version_id, lwir)
        return version_id

    async def _run(self, workflow: Available, version_id: str, planner_run: str, value: Any,
                   sub_run: str, call_id: str) -> dict[str, Any]:
        from lwtool.planner.api import definition_durability, definition_models, workspace_of
        from lwtool.record.errors import RunFailedError, RunWaitingError, WaitingForInput
        from lwtool.runtime.interpreter import start_run

        if workflow.nested is not None:
            return await self._run_pipeline(workflow, value, sub_run, call_id)
        # `value` was checked against the input schema when the call was admitted (_admit)
        lwir = self.world.get_version(version_id)
        assert lwir is not None, version_id
        workspace = {**(workspace_of(workflow.definition, workflow.folder) or {}),
                     "pipelineRunId": self.run_id, "plannerRunId": planner_run}
        links = {"parentRunId": self.run_id, "parentCallId": call_id,
                 "plannerRunId": planner_run}
        models = {**definition_models(workflow.definition), **self.models}
        async with self.gate:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.say(f"sub-run {sub_run} of {workflow.id} started")
            try:
                result = await start_run(self.world, lwir, value, self.tools, models, sub_run,
                                         step_timeout=self.step_timeout, workspace=workspace,
                                         durability=definition_durability(workflow.definition),
                                         version_id=version_id, links=links,
                                         budget=self.budget)
            except RunWaitingError as waiting:  # the pipeline waits with it
                self.say(f"sub-run {sub_run} waits for a person")
                raise WaitingForInput([{**r, "runId": sub_run} for r in waiting.requests]) \
                    from None
            except RunFailedError as failed:
                self.say(f"sub-run {sub_run} failed: {failed.cause_code}")
                return {"runId": sub_run, "status": "failed", "outputRef": None,
                        "outputPath": None, "outputSummary": None,
                        "error": f"{failed.cause_code}: {failed.message}"}
            finally:
                self.active -= 1
        return {**result, **self._output_files(sub_run, result)}

    async def _run_pipeline(self, workflow: Available, value: Any, sub_run: str,
                            call_id: str) -> dict[str, Any]:
        """A nested pipeline as a sub-run: its own orchestrator session (run `sub_run`,
        under this one), sharing this pipeline's tools, models and budget; refused past
        maxDepth."""
        from lwtool.record.errors import RunFailedError, RunWaitingError, WaitingForInput

        assert workflow.nested is not None and self.nest is not None
        if self.depth + 1 > self.depth_limit:
            self.say(f"sub-run {sub_run} of pipeline {workflow.id} refused: max_depth")
            return {"runId": sub_run, "status": "failed", "outputRef": None,
                    "outputPath": None, "outputSummary": None,
                    "error": f"max_depth: pipeline {workflow.id} would nest "
                             f"{self.depth + 1} deep, past maxDepth {self.depth_limit}; "
                             "answer without it"}
        async with self.gate:
            self.say(f"sub-run {sub_run} of pipeline {workflow.id} started")
            try:
                result = await self.nest(
                    workflow.nested, value, world=self.world, tools=self.tools,
                    models=self.models, run_id=sub_run, step_timeout=self.step_timeout,
                    planner_model=self.planner_model, progress=self.say, budget=self.budget,
                    depth=self.depth + 1, depth_limit=self.depth_limit,
                    links={"parentRunId": self.run_id, "parentCallId": call_id})
            except RunWaitingError as waiting:
                raise WaitingForInput([{**r, "runId": r.get("runId", sub_run)}
                                       for r in waiting.requests]) from None
            except RunFailedError as failed:
                self.say(f"sub-run {sub_run} failed: {failed.cause_code}")
                return {"runId": sub_run, "status": "failed", "outputRef": None,
                        "outputPath": None, "outputSummary": None,
                        "error": f"{failed.cause_code}: {failed.message}"}
        done = {"runId": sub_run, "status": "completed", "output": result.get("output")}
        return {**done, **self._output_files(sub_run, done)}

    def _output_files(self, sub_run: str, result: dict[str, Any]) -> dict[str, Any]:
        """The whole output in the orchestrator's scratch; a summary for the model."""
        from lwtool.harness.stores import ScratchLayout

        text = json.dumps(result.get("output"), ensure_ascii=False)
        ref = self._output_ref(sub_run)
        data_dir = getattr(self.world, "data_dir", None)
        path = None
        if data_dir is not None:
            folder = ScratchLayout(Path(data_dir), self.run_id).run_scratch() / OUTPUTS
            folder.mkdir(mode=0o700, exist_ok=True)
            (folder / f"{sub_run}.json").write_text(text)
            path = f"/mnt/scratch/own/{OUTPUTS}/{sub_run}.json"
        summary = text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS - 1] + "…"
        return {"outputRef": ref, "outputPath": path, "outputSummary": summary}

    def _output_ref(self, sub_run: str) -> str | None:
        events = self.world.events(sub_run, ["RunCompleted"])
        envelope = events[-1].payload.get("envelope") if events else None
        return (envelope or {}).get("outputRef")

    def _recall(self) -> None:
        """The versions this pipeline run planned before (a resumed run: its committed
        plan calls are replayed from the log, not run again, so they are read here)."""
        from lwtool.record.ids import short_hash

        try:
            events = self.world.events(self.run_id, ["harness.tool_call.started",
                                                     "harness.tool_call.succeeded"])
        except RunNotFound:
            return
        started = {e.payload.get("callId"): e.payload for e in events
                   if e.type == "harness.tool_call.started"}
        for event in events:
            call = started.get(event.payload.get("callId")) if \
                event.type == "harness.tool_call.succeeded" else None
            result = event.payload.get("result")
            if call is None or call.get("toolName") not in (PLAN, START) \
                    or not isinstance(result, dict) or "workflowVersionId" not in result:
                continue
            args = call.get("args") or {}
            version_id = str(result["workflowVersionId"])
            planner_run = reserved_ids(self.run_id, call).get("plannerRunId", "")
            self.versions[version_id] = (str(args.get("workflowId")), planner_run)
            self.plans[(str(args.get("workflowId")), short_hash(args.get("input")))] = version_id


def sub_runs(world: World, run_id: str) -> list[dict[str, Any]]:
    """The sub-runs a pipeline run started, in call order: {runId, callId, status}
    (`running` for one whose call has no result yet; a refused call started none)."""
    try:
        events = world.events(run_id, ["harness.tool_call.started",
                                       "harness.tool_call.succeeded",
                                       "harness.tool_call.failed"])
    except RunNotFound:
        return []
    rows: dict[str, dict[str, Any]] = {}
    for event in events:
        payload = event.payload
        call_id = str(payload.get("callId"))
        sub_run = reserved_ids(run_id, payload).get("subRunId")
        if event.type == "harness.tool_call.started" and sub_run is not None:
            rows[call_id] = {"runId": sub_run, "callId": call_id, "status": "running"}
        elif call_id in rows and event.type == "harness.tool_call.succeeded":
            result = payload.get("result") or {}
            rows[call_id]["status"] = result.get("status", "completed")
        elif call_id in rows:  # refused before a sub-run started
            del rows[call_id]
    return list(rows.values())


def sub_run_states(world: World, run_id: str) -> list[dict[str, str]]:
    """A pipeline run's sub-runs, in call order, as each one's own record says:
    {runId, workflow (the workflow id it ran), status (`interrupted` for one no process
    executes)}; one its call started that has no record yet: `running`, no workflow."""
    from lwtool.world.base import shown_status

    states = []
    for row in sub_runs(world, run_id):
        try:
            record = world.get_run(row["runId"])
        except RunNotFound:
            states.append({"runId": row["runId"], "workflow": "", "status": row["status"]})
            continue
        workflow = (record.options.get("workspace") or {}).get("workflowId")
        states.append({"runId": record.run_id, "workflow": str(workflow or ""),
                       "status": shown_status(world, record.run_id, record.status)})
    return states

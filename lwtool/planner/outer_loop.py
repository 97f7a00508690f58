"""The outer loop (Layer B): plan, run, supervise, and again, up to `maxOuterCycles`.

Each cycle plans with the cycle's context in the OrchestrationRequest
(`outerLoop: {cycleNumber, maxCycles, isFinalCycle, priorCycles}`), runs the locked
version, then asks `supervise({goal, cycles})`: `{"kind": "done", "finalOutput"}` ends
the loop; `{"kind": "continue", "promptNote"?}` starts the next cycle (the note reaches
the planner in `priorCycles`), or on the final cycle fails with `outer_loop_exhausted`.

The loop is a run of its own (id = outerLoopId; `lwtool events` shows it): RunStarted,
one OuterLoopCycleCompleted per cycle (after its supervise call), RunCompleted with the
final output or RunFailed. `outer-loops/<outerLoopId>.json` (written atomically) holds
the cycles and `pendingCycleRunId`: a loop killed inside a cycle resumes that cycle's
planner session and run from their last commits; killed between cycles it goes on
with the next cycle's planning. Cycle runs are `<outerLoopId>.c<N>` (planner
`<outerLoopId>.c<N>.plan`). A supervise call cut off by a kill is made again.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lwtool.authoring.snapshot import definition_hash
from lwtool.canonical.digest import workflow_version_id
from lwtool.runtime.errors import CapabilityDriftError, RunFailedError
from lwtool.runtime.run_state import short_hash
from lwtool.world.base import NewEvent, RunNotFound, World

OUTER_KIND = "OuterLoop"
DECISION_MODE = {"mode": "object", "schema": {
    "type": "object", "required": ["kind"],
    "properties": {"kind": {"enum": ["done", "continue"]}, "promptNote": {"type": "string"},
                   "finalOutput": {}}}}
SUPERVISOR_SYSTEM = (
    "You supervise a workflow that is planned and run in cycles toward a goal. Read the "
    "goal and every cycle so far (its workflow version, status and output). If the last "
    "output meets the goal, answer {\"kind\": \"done\", \"finalOutput\": <the output to "
    "return>}. Otherwise answer {\"kind\": \"continue\", \"promptNote\": <what the next "
    "plan must do differently>}.")
Planner = Callable[[dict[str, Any], str], Any]  # (outerLoop context, planner run id) -> plan
Runner = Callable[[dict[str, Any], str], Any]  # (lwir, run id) -> RunResult


async def run_outer_loop(world: World, definition: dict[str, Any], run_input: Any,
                         supervise: Callable[[dict[str, Any]], Any], plan: Planner,
                         run: Runner, outer_loop_id: str,
                         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Drive the cycles; returns `{outerLoopId, runId, status, output, cycles}`."""
    say = progress or (lambda _: None)
    max_cycles = int((definition.get("planner") or {}).get("maxOuterCycles", 1))
    subject = {"kind": OUTER_KIND, "workflowDefinitionHash": definition_hash(definition),
               "maxCycles": max_cycles, "inputHash": short_hash(run_input)}
    version_id = workflow_version_id(subject)
    world.register_version(version_id, subject)
    with world.lock_run(outer_loop_id):
        history = _history(world, outer_loop_id, version_id)
        if history is None:
            cycles: list[dict[str, Any]] = []
            world.create_run(outer_loop_id, version_id, run_input, {"outerLoop": True}, [
                NewEvent("RunStarted", {"workflowVersionId": version_id, "pid": os.getpid(),
                                        "inputHash": short_hash(run_input),
                                        "maxCycles": max_cycles})])
        else:
            cycles, terminal = history
            if terminal is not None:
                return _finished(outer_loop_id, version_id, terminal, cycles)
        manifest = _Manifest(Path(world.data_dir), outer_loop_id, subject)
        while True:
            number = len(cycles) + 1
            run_id = f"{outer_loop_id}.c{number}"
            manifest.write(cycles, pending=run_id)
            context = {"cycleNumber": number, "maxCycles": max_cycles,
                       "isFinalCycle": number == max_cycles, "priorCycles": cycles}
            say(f"outer loop {outer_loop_id}: cycle {number} of {max_cycles}")
            cycle = await _cycle(plan, run, context, run_id, number)
            decision = await _supervise(supervise, definition, cycles + [cycle],
                                        outer_loop_id, version_id)
            cycle["decision"] = decision
            cycles.append(cycle)
            done = decision["kind"] == "done"
            exhausted = not done and number >= max_cycles
            closing = [NewEvent("OuterLoopCycleCompleted", cycle)]
            if done:
                closing.append(NewEvent("RunCompleted", {"output": decision.get("finalOutput"),
                                                         "cycles": number}))
            elif exhausted:
                closing.append(NewEvent("RunFailed", _exhausted(number)))
            status = "completed" if done else "failed" if exhausted else None
            world.append(outer_loop_id, closing, status)
            manifest.write(cycles, pending=None, status=status or "running")
            if done or exhausted:
                return _finished(outer_loop_id, version_id, closing[-1], cycles)


async def _cycle(plan: Planner, run: Runner, context: dict[str, Any], run_id: str,
                 number: int) -> dict[str, Any]:
    """Plan and run one cycle; a failed run is a cycle result (supervise decides)."""
    cycle: dict[str, Any] = {"cycleNumber": number, "runId": run_id}
    planned = await plan(context, f"{run_id}.plan")
    cycle["workflowVersionId"] = planned.version_id
    try:
        result = await run(planned.lwir, run_id)
    except RunFailedError as failure:
        cycle.update(status="failed", error={"causeCode": failure.cause_code,
                                             "message": failure.message})
    else:
        cycle.update(status=result["status"], output=result["output"])
    return cycle


async def _supervise(supervise: Callable[[dict[str, Any]], Any], definition: dict[str, Any],
                     cycles: list[dict[str, Any]], loop_id: str, version_id: str
                     ) -> dict[str, Any]:
    decision = supervise({"goal": definition.get("description", ""), "cycles": cycles})
    if inspect.isawaitable(decision):
        decision = await decision
    kind = decision.get("kind") if isinstance(decision, dict) else None
    if kind not in ("done", "continue"):
        raise RunFailedError(loop_id, version_id, "runtime_config_error",
                             "supervise must return {'kind': 'done', 'finalOutput': ...} or "
                             f"{{'kind': 'continue', 'promptNote'?: ...}}, not {decision!r}")
    kept = {"kind": kind}
    if kind == "done":
        kept["finalOutput"] = decision.get("finalOutput")
    elif isinstance(decision.get("promptNote"), str):
        kept["promptNote"] = decision["promptNote"]
    plain: dict[str, Any] = json.loads(json.dumps(kept, default=str))
    return plain


def _exhausted(number: int) -> dict[str, Any]:
    return {"causeCode": "outer_loop_exhausted",
            "message": f"supervise asked to continue after the final cycle ({number})"}


def _history(world: World, loop_id: str, version_id: str
             ) -> tuple[list[dict[str, Any]], Any] | None:
    """The committed cycles and the terminal event (None while the loop goes on); None
    when the loop has not started."""
    try:
        record = world.get_run(loop_id)
    except RunNotFound:
        return None
    if record.version_id != version_id:
        raise CapabilityDriftError(loop_id, record.version_id, "capability_drift",
                                   f"outer loop {loop_id} was started for another "
                                   "definition, input or cycle limit")
    events = world.events(loop_id)
    cycles = [dict(e.payload) for e in events if e.type == "OuterLoopCycleCompleted"]
    terminal = next((e for e in events if e.type in ("RunCompleted", "RunFailed")), None)
    return cycles, terminal


def _finished(loop_id: str, version_id: str, terminal: Any,
              cycles: list[dict[str, Any]]) -> dict[str, Any]:
    payload = terminal.payload
    if terminal.type == "RunFailed":
        error = RunFailedError(loop_id, version_id, "outer_loop_exhausted",
                               str(payload.get("message", "")))
        error.outer_loop_id = loop_id
        error.last_cycle_output = cycles[-1].get("output") if cycles else None
        raise error
    return {"outerLoopId": loop_id, "runId": cycles[-1]["runId"] if cycles else None,
            "workflowVersionId": cycles[-1].get("workflowVersionId") if cycles else None,
            "status": "completed", "output": payload.get("output"), "cycles": cycles}


class _Manifest:
    """`outer-loops/<id>.json`, rewritten atomically at each cycle boundary."""

    def __init__(self, data_dir: Path, loop_id: str, subject: dict[str, Any]) -> None:
        self.path = data_dir / "outer-loops" / f"{loop_id}.json"
        self.loop_id = loop_id
        self.subject = subject

    def write(self, cycles: list[dict[str, Any]], pending: str | None,
              status: str = "running") -> None:
        from lwtool.lock.io import write_text_atomically

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        document = {"outerLoopId": self.loop_id, **self.subject, "status": status,
                    "pendingCycleRunId": pending, "cycles": cycles}
        write_text_atomically(self.path, json.dumps(document, indent=2, default=str) + "\n",
                              "the outer-loop manifest")


def model_supervisor(model: Any, system: str | None = None
                     ) -> Callable[[dict[str, Any]], Any]:
    """`supervise` as one model call per cycle (a litellm model string or a
    ScriptedModel) answering {kind, promptNote?, finalOutput?}; its answer is recorded in
    OuterLoopCycleCompleted (a call cut off by a kill is made again)."""
    from lwtool.harness.models import OutputRequest, call_model, output_request
    from lwtool.runtime.outputs import OutputInvalid, parse_model_text

    async def supervise(context: dict[str, Any]) -> Any:
        request = output_request(model, DECISION_MODE) if isinstance(model, str) \
            else OutputRequest(None, False)
        instruction = "" if request.native else (
            "\n\nReply with only JSON that matches this JSON Schema: "
            + json.dumps(DECISION_MODE["schema"]))
        messages = [{"role": "system", "content": (system or SUPERVISOR_SYSTEM) + instruction},
                    {"role": "user", "content": json.dumps(context, ensure_ascii=False,
                                                           default=str)}]
        reply = await call_model(model, messages, DECISION_MODE, messages[-1]["content"],
                                 request)
        try:
            return parse_model_text(reply.text, DECISION_MODE)
        except OutputInvalid as exc:
            return {"kind": None, "problem": f"the supervising model's answer: {exc}"}

    return supervise

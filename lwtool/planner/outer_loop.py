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
`<outerLoopId>.c<N>.plan`); their RunStarted links name the loop and the cycle. A
supervise call cut off by a kill is made again.

The loop always ends: a cycle whose planning fails, a supervise that raises or answers
something other than done/continue, end the loop run with RunFailed (that cause; the
manifest says failed) and raise RunFailedError with `outer_loop_id`. Only
capability_drift leaves it open (fix what changed and run again). On resume the
manifest is read back: its pending cycle is the one resumed (a stale or unreadable
manifest is rewritten from the log, which wins).
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from lwtool.authoring.snapshot import definition_hash
from lwtool.canonical.digest import workflow_version_id
from lwtool.record.errors import CapabilityDriftError, RunFailedError
from lwtool.record.ids import short_hash
from lwtool.runtime.loop_result import loop_error, loop_result
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
Runner = Callable[..., Any]  # (lwir, run id, links) -> RunResult


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
                return loop_result(world, outer_loop_id, version_id, terminal, cycles)
        manifest = _Manifest(Path(world.data_dir), outer_loop_id, subject)
        pending = manifest.pending()
        while True:
            number = len(cycles) + 1
            run_id = f"{outer_loop_id}.c{number}"
            if pending == run_id:
                say(f"outer loop {outer_loop_id}: resuming cycle {number} ({run_id})")
            pending = None
            manifest.write(cycles, pending=run_id)
            context = {"cycleNumber": number, "maxCycles": max_cycles,
                       "isFinalCycle": number == max_cycles, "priorCycles": cycles}
            say(f"outer loop {outer_loop_id}: cycle {number} of {max_cycles}")
            try:
                cycle = await _cycle(plan, run, context, run_id, number, outer_loop_id)
                decision = await _supervise(supervise, definition, cycles + [cycle],
                                            outer_loop_id, version_id)
            except CapabilityDriftError as drift:  # nothing ran: fix it and run again
                drift.outer_loop_id = outer_loop_id
                raise
            except RunFailedError as failure:
                _fail(world, manifest, cycles, outer_loop_id, failure.cause_code,
                      f"cycle {number}: {failure.message}", number)
            except Exception as exc:  # noqa: BLE001 - a supervise that raises ends the loop
                _fail(world, manifest, cycles, outer_loop_id, "step_failed",
                      f"cycle {number}: supervise raised {type(exc).__name__}: {exc}", number)
            call = decision.pop("call", None)
            if call is not None:
                cycle["supervisorCall"] = call
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
                return loop_result(world, outer_loop_id, version_id, closing[-1], cycles)


def _fail(world: World, manifest: _Manifest, cycles: list[dict[str, Any]], loop_id: str,
          cause: str, message: str, number: int) -> NoReturn:
    """End the loop run as failed (RunFailed, manifest) and raise its RunFailedError."""
    world.append(loop_id, [NewEvent("RunFailed", {"causeCode": cause, "message": message,
                                                  "cycleNumber": number})], "failed")
    manifest.write(cycles, pending=None, status="failed")
    raise loop_error(loop_id, manifest.version_id, cause, message, cycles)


async def _cycle(plan: Planner, run: Runner, context: dict[str, Any], run_id: str,
                 number: int, loop_id: str) -> dict[str, Any]:
    """Plan and run one cycle; a failed run is a cycle result (supervise decides)."""
    cycle: dict[str, Any] = {"cycleNumber": number, "runId": run_id,
                             "plannerRunId": f"{run_id}.plan"}
    planned = await plan(context, f"{run_id}.plan")
    cycle["workflowVersionId"] = planned.version_id
    links = {"outerLoopId": loop_id, "cycleNumber": number, "plannerRunId": f"{run_id}.plan"}
    try:
        result = await run(planned.lwir, run_id, links)
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
    kept: dict[str, Any] = {"kind": kind}
    if isinstance(decision.get("call"), dict):  # the supervising model's call (its usage)
        kept["call"] = decision["call"]
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


class _Manifest:
    """`outer-loops/<id>.json`, rewritten atomically at each cycle boundary."""

    def __init__(self, data_dir: Path, loop_id: str, subject: dict[str, Any]) -> None:
        self.path = data_dir / "outer-loops" / f"{loop_id}.json"
        self.loop_id = loop_id
        self.subject = subject
        self.version_id = workflow_version_id(subject)

    def pending(self) -> str | None:
        """The cycle run a killed loop was in, as the manifest says (None when it says
        none, or is missing, unreadable or for another subject: then the log decides)."""
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(document, dict) or any(
                document.get(key) != value for key, value in self.subject.items()):
            return None
        pending = document.get("pendingCycleRunId")
        return pending if isinstance(pending, str) else None

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
    from lwtool.calls.models import OutputRequest, call_model, output_request
    from lwtool.steps.outputs import OutputInvalid, parse_model_text

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
        call = {"model": {"provider": reply.provider, "modelId": reply.model_id},
                "usage": reply.usage}
        try:
            decision = parse_model_text(reply.text, DECISION_MODE)
        except OutputInvalid as exc:
            return {"kind": None, "problem": f"the supervising model's answer: {exc}",
                    "call": call}
        return {**decision, "call": call} if isinstance(decision, dict) else decision

    return supervise

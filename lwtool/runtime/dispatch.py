"""Run one step attempt durably: replay it from the journal, or execute it by type with
retries, record its events and commit its result envelope.

Events of one attempt (the spec's sequence per task kind): StepAttemptStarted (with the
attempt's input: inline, or `inputRef` when large), harness.session.started and, for the
direct-execute types (tool.call, code.run, decision), harness.execute_step.started
(committed together, without an fsync: evidence); ai.generate's
harness.model.called/responded; then harness.execute_step.succeeded (direct types),
harness.session.completed (with the session's token usage) and StepCompleted in one
durable commit (or harness.session.failed and StepAttemptFailed).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from typing import Any

from lwtool.canonical.plain_json import NotJson, to_json
from lwtool.harness.contract import ExecuteStepTask, HarnessContext
from lwtool.harness.manifests import worker_manifest
from lwtool.harness.worker import worker_identity, worker_system
from lwtool.harness.workflow import DIRECT_KINDS, WorkflowHarness
from lwtool.record.errors import StepFailure
from lwtool.record.ids import child_run_id, hash_bytes, short_hash
from lwtool.record.run_state import step_timeout
from lwtool.record.sensitive import keyed_hash
from lwtool.runtime.deadlines import Deadlines
from lwtool.runtime.scope import Scope
from lwtool.steps import STEP_KINDS
from lwtool.steps.outputs import OutputInvalid, check_output
from lwtool.tools import own_copy
from lwtool.validate.context import MODEL_STEPS
from lwtool.validate.invokes import CHILD_STEPS
from lwtool.world.base import Event, NewEvent

INPUT_INLINE_LIMIT = 16 * 1024  # bytes of a step input kept in its StepAttemptStarted

DEFAULT_RETRY = {"maxAttempts": 3, "backoffMs": 200}


def _completed_seq(committed: list[Event]) -> int:
    last = committed[-1]  # the StepCompleted closes its commit
    if last.type == "StepCompleted":
        return last.seq
    return next(e.seq for e in reversed(committed) if e.type == "StepCompleted")


async def run_step(scope: Scope, sid: str, path: str, visit: int) -> tuple[Any, int]:
    """The step's result and the commit position of its StepCompleted."""
    step = scope.steps[sid]
    uses = step.get("uses", "")
    run = scope.run
    recorded = run.journal.recorded(path, sid, uses)
    if recorded is not None:
        seq = run.journal.completed_seq[path]
        if uses == "decision":
            return recorded.get("chosen"), seq
        return await run.output_of(recorded), seq
    failed = run.journal.failed_final.get(path)
    if failed is not None:
        raise StepFailure(failed.get("causeCode", "step_failed"), str(failed.get("error", "")),
                          path)
    if uses == "parallel":
        from lwtool.runtime.parallel import run_parallel

        output, committed = await run_parallel(scope, step, path, visit)
        return output, _completed_seq(committed)
    if uses == "human.input":  # answered by a person, not executed by a harness
        from lwtool.steps.human_input import run_human_input

        output, committed = await run_human_input(scope, step, path, visit)
        return output, _completed_seq(committed)
    kind = STEP_KINDS.get(uses)
    if kind is None:
        raise StepFailure("runtime_config_error", f"unknown step type '{uses}'", path)
    attempt = run.journal.failed_attempts.get(path, 0)
    while True:
        attempt += 1
        try:
            # The slot bounds execution, not the commit: the next step may start while
            # this one's result is being made durable. Its dependents still wait for it.
            await run.step_slots.acquire()  # not `async with`: two coroutines less
            run.active_steps += 1
            try:
                result, closing, inline = await _attempt(scope, step, path, visit,
                                                         attempt, kind)
            finally:
                run.active_steps -= 1
                run.step_slots.release()
            scope.executed(sid)
            committed = await run.record(closing, artifacts=inline)
            return result, _completed_seq(committed)
        except StepFailure as failure:
            failure.step_path = failure.step_path or path
            retry = {**DEFAULT_RETRY, **(step.get("retry") or {})}
            spent = attempt - run.journal.retry_base.get(path, 0)  # since `lwtool retry`
            final = not failure.transient or spent >= int(retry["maxAttempts"])
            run.session_usage(path)  # a failed session's tokens stay in its model events
            await run.record([
                NewEvent("harness.session.failed", {"runId": run.run_id,
                                                    "error": failure.message}, path),
                NewEvent("StepAttemptFailed", {
                    "stepId": sid, "attempt": attempt, "causeCode": failure.cause,
                    "transient": failure.transient, "final": final,
                    "error": failure.message,
                    **({"retryAfterS": failure.details["retryAfterS"]}
                       if "retryAfterS" in failure.details else {}),
                    **({"traceback": failure.details["traceback"]}
                       if "traceback" in failure.details else {}),
                    **({"deniedHosts": failure.details["deniedHosts"]}
                       if "deniedHosts" in failure.details else {})}, path)])
            if final:
                raise
            backoff = int(retry["backoffMs"]) * 2 ** (spent - 1) / 1000
            # a provider's Retry-After (bounded in lwtool.calls.provider_errors) wins
            await asyncio.sleep(max(backoff, float(failure.details.get("retryAfterS", 0))))


def _input_hash(step_input: Any) -> tuple[str, bytes | None]:
    """The attempt's inputHash, and the bytes it was taken over when they are too large
    to record inline (StepAttemptStarted then names their artifact, `inputRef`, stored
    before it)."""
    data = hash_bytes(step_input)
    return ("sha256:" + hashlib.sha256(data).hexdigest(),
            data if len(data) > INPUT_INLINE_LIMIT else None)


def _deadlines(run: Any) -> Deadlines:
    """The run's attempt deadlines (one loop timer for all of them)."""
    found: Deadlines | None = run.memo.get("deadlines")
    if found is None:
        found = run.memo["deadlines"] = Deadlines()
        run.on_end.append(found.close)
    return found


def _deadline(run: Any, step: dict[str, Any], uses: str, limit: float) -> Any:
    """The attempt's deadline (no extra task, unlike wait_for). A child run
    (workflow.invoke, map) is timed only by its step's own timeoutMs: its steps have
    theirs."""
    if uses in CHILD_STEPS and "timeoutMs" not in step:
        return contextlib.nullcontext()
    return _deadlines(run).within(limit)


def _joined(worker_system: str, step_system: Any) -> str | None:
    """What the model's system prompt is made of: the worker's, then the step's."""
    parts = [part for part in (worker_system, step_system) if isinstance(part, str) and part]
    return "\n\n".join(parts) if parts else step_system


async def custom_context(run: Any, scope: Scope, step: dict[str, Any],
                         path: str) -> HarnessContext:
    """What a custom worker harness is documented to get: besides the recorder, tools,
    scope and workspace, the step's model (an ai.generate step's slot resolved), the
    worker's system prompt, the step's mounts ({target: {source, mode}}; peer-steps
    holds the other steps' outputs), the bash capabilities it would get and the worker
    skills."""
    from lwtool.calls.models import resolve_slot
    from lwtool.harness.bash import BashOptions
    from lwtool.harness.peers import write_peer_outputs
    from lwtool.harness.workspace import StepWorkspace

    await write_peer_outputs(run, path)
    workspace = StepWorkspace.of_run(run, path)
    settings = step.get("with") or {}
    model = resolve_slot(str(settings["model"]), run.models) \
        if step.get("uses") in MODEL_STEPS and settings.get("model") else None
    options = BashOptions.from_env()
    return HarnessContext(
        recorder=run, tools=run.tools, model=model, system=worker_system(run), scope=scope,
        mounts={m.target: {"source": str(m.source), **m.describe()}
                for m in workspace.mounts()},
        bash={"sandbox": options.sandbox, "timeout": options.timeout,
              "maxOutputBytes": options.max_output_bytes},
        skills=[s.listed() for s in workspace.resolved_skills()[0]], workspace=workspace)


def _checked_output(output: Any, step: dict[str, Any], harness_id: str, path: str) -> Any:
    """A custom harness's output as plain JSON (what later steps see live is what a
    replay reads back from the log, as for a tool's result), checked against the
    step's output mode; StepFailure (step_schema_error) otherwise."""
    what = f"the {harness_id} harness's output"
    try:
        output = to_json(output)
        check_output(output, step.get("output"), what)
    except NotJson as exc:
        raise StepFailure("step_schema_error", f"{what} is not JSON {exc}", path) from None
    except OutputInvalid as exc:
        raise StepFailure("step_schema_error", str(exc), path) from None
    return output


def _granted(step: dict[str, Any]) -> dict[str, Any]:
    """The secrets the step is granted, by name (never a value), for its attempt's event."""
    names = step.get("secrets")
    return {"secrets": sorted(str(n) for n in names)} if names else {}


async def _attempt(scope: Scope, step: dict[str, Any], path: str, visit: int, attempt: int,
                   kind: Any) -> tuple[Any, list[NewEvent], list[tuple[str, bytes]]]:
    """Execute one attempt; return its output and the closing events to commit."""
    run = scope.run
    sid, uses = step["id"], step["uses"]
    started = time.perf_counter()
    expression_scope = scope.expression_scope(sid, path, visit, attempt)
    step_input = kind.resolve_input(scope, step, expression_scope, path)
    if step.get("sensitive") is True:  # its values are sealed, never inline
        run.sensitive_paths.add(path)
        input_hash = keyed_hash(run.sensitive_key, step_input)
        recorded_input = {"inputRef": await run.sealed_ref(step_input), "sensitive": True}
    else:
        input_hash, large = _input_hash(step_input)
        recorded_input = {"input": step_input} if large is None else \
            {"inputRef": await run.world.put_artifact(large, run.fsyncs)}
    settings = step.get("with") or {}
    generates = uses in MODEL_STEPS
    manifest = worker_manifest(run.harness.harness_id, run.version_id, path,
                               run.config_hash(step), run.tools_hash,
                               definition_hash=run.workspace.get("definitionHash"),
                               model_slot=settings.get("model") if generates else None,
                               system=_joined(worker_system(run), settings.get("system"))
                               if generates else None,
                               **worker_identity(run, path))
    run.journal.check_session(run.run_id, run.version_id, path, manifest,
                              {"allowedToolsHash": run.legacy_tools_hash})
    direct = not generates  # spec: execute_step.* for direct-execute types
    execute_started: dict[str, Any] = {"stepPath": path, "stepKind": uses,
                                       "inputHash": input_hash}
    if uses == "tool.call":
        execute_started["toolName"] = settings.get("tool")
    elif uses == "workflow.invoke":  # the child it starts (or resumes), and its version
        execute_started.update(childRunId=child_run_id(run.run_id, path),
                               workflowVersionId=settings.get("workflow"))
    run.note([
        NewEvent("StepAttemptStarted", {"stepId": sid, "uses": uses, "visit": visit,
                                        "attempt": attempt, "inputHash": input_hash,
                                        **recorded_input, **_granted(step)}, path),
        NewEvent("harness.session.started", {
            "runId": run.run_id, "role": "worker", "task": {"kind": "execute_step"},
            "manifest": manifest, "manifestHash": short_hash(manifest),
            **({"parentRunId": run.parent_run_id} if run.parent_run_id else {})}, path),
        *([NewEvent("harness.execute_step.started", execute_started, path)] if direct else []),
    ])
    limit, source = step_timeout(step, run.step_timeout)
    custom = type(run.harness) is not WorkflowHarness  # subclasses are custom too
    try:
        with _deadline(run, step, uses, limit):
            if uses in CHILD_STEPS or (not custom and uses in DIRECT_KINDS):
                # What the built-in harness does with these (WorkflowHarness._builtin),
                # without a task, a context and a result object a step.
                output, call_events = await kind.execute(scope, step, path, step_input,
                                                         expression_scope)
            else:
                done = await run.harness.run(
                    # A custom harness's code gets its own copy, as a tool does.
                    ExecuteStepTask(step, path, own_copy(step_input) if custom else step_input,
                                    expression_scope),
                    await custom_context(run, scope, step, path) if custom else
                    # The workspace is laid out by the built-in harness when it needs one.
                    HarnessContext(recorder=run, tools=run.tools, system=worker_system(run),
                                   scope=scope))
                output, call_events = done.output, done.events
        if custom and uses != "decision":  # the spec's execution loop, step 8
            output = _checked_output(output, step, run.harness.harness_id, path)
        # A secret value the step's tool, code or model put into its output is masked
        # here, once, for the log and for every later step alike (replay sees the same)
        output = run.redacted(output)
    except TimeoutError:
        # Transient: the step's retry policy applies; a sync tool's thread cannot be
        # stopped and finishes on its own, its result unused.
        raise StepFailure("timeout", f"step attempt took longer than {limit:g} s "
                          f"({source})", path, transient=True) from None
    duration = int((time.perf_counter() - started) * 1000)
    inline: list[tuple[str, bytes]] = []
    if uses == "decision":
        output_hash = short_hash(output)
        payload = {"stepId": sid, "uses": uses, "visit": visit, "attempt": attempt,
                   "chosen": output}
    else:
        # The output is serialized once: its artifact's content hash is its outputHash.
        envelope, inline = await run.envelope(output, uses, step.get("output"), path)
        output_hash = "sha256:" + envelope["outputRef"].removeprefix("artifact://sha256:")
        payload = {"stepId": sid, "uses": uses, "visit": visit, "attempt": attempt,
                   "envelope": envelope}
    closing = [
        *call_events,
        *([NewEvent("harness.execute_step.succeeded", {"stepPath": path,
                                                       "outputHash": output_hash,
                                                       "durationMs": duration}, path)]
          if direct else []),
        NewEvent("harness.session.completed", {"runId": run.run_id,
                                               "usage": run.session_usage(path)}, path),
        NewEvent("StepCompleted", payload, path),
    ]
    return output, closing, inline

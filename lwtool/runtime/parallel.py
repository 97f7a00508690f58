"""parallel: bounded branches over a known array, fanned back in deterministically.

Each branch runs the body as its own scope, with step paths `<parallel>[<key>].<step>`.
Concurrency is bounded by `maxConcurrency` here and by the world's
`max_concurrent_steps` across the run (leaf steps hold a world slot; the coordinating
parallel step does not, so nesting cannot deadlock). When the run has somewhere else to
execute branches (`RunState.branches`: `lwtool worker` in a PostgreSQL world) and the
group may run more than one at once, each branch is handed there and its output read
back; the fan-in is the same either way. `fail_fast` cancels the other
branches at the first failure, and the group fails with that branch's cause.
`all_settled` never cancels: once every branch has settled, the group's output is the
fan-in of the branches that succeeded (declared order), its StepCompleted lists
`failedBranches` ({itemKey, causeCode, failedStepPath, message}), and it fails only
when no branch succeeded. Completed branches stay committed either way. A branch that
waits for a person (human.input) waits alone: the other branches go on, an answer given
meanwhile sets it going again (`Waiting`), and once no branch executes any more the
group passes every branch's wait up (WaitingForInput).
"""

from __future__ import annotations

import asyncio
from typing import Any

from lwtool.expr.functions import to_text
from lwtool.record.errors import StepFailure, WaitingForInput
from lwtool.steps.inputs import resolve
from lwtool.world.base import Event, NewEvent


async def run_parallel(scope: Any, step: dict[str, Any], path: str,
                       visit: int) -> tuple[list[Any], list[Event]]:
    run = scope.run
    with_ = step.get("with") or {}
    expression_scope = scope.expression_scope(step["id"], path, visit, 1)
    items = resolve(with_.get("items"), expression_scope, path, "with.items")
    if not isinstance(items, list):
        raise StepFailure("step_failed", f"items must resolve to an array, got "
                          f"{type(items).__name__}", path)
    limit = int(with_.get("maxBranches", 100))
    if len(items) > limit:
        raise StepFailure("step_failed", f"items resolve to {len(items)} entries, more than "
                          f"maxBranches ({limit})", path)
    keys = []
    for index, item in enumerate(items):
        if "itemKey" in with_:
            key = resolve(with_["itemKey"], {**expression_scope, "item": item}, path,
                          "with.itemKey")
            keys.append(to_text(key))
        else:
            keys.append(str(index))
    if len(set(keys)) != len(keys):
        duplicate = next(k for k in keys if keys.count(k) > 1)
        raise StepFailure("step_failed", f"itemKey gives '{duplicate}' to more than one item "
                          "(keys must be unique in the group)", path)
    width = int(with_.get("maxConcurrency", 1))
    gate = asyncio.Semaphore(width)
    fan_in = with_.get("fanIn") or {}
    # one at a time gains nothing elsewhere; a nested group runs where its branch runs
    remote = run.branches if width > 1 and not scope.prefix else None

    waiting = Waiting(len(items))

    async def branch(item: Any, key: str) -> Any:
        try:
            while True:
                try:
                    return await run_branch(item, key)
                except WaitingForInput as wait:  # a result here: not to cancel the others
                    if not await waiting.for_answer(run, wait.requests):
                        return wait
                    # answered meanwhile: the branch goes on from the log
        finally:
            waiting.ended()

    async def run_branch(item: Any, key: str) -> Any:
        await gate.acquire()
        if remote is not None:
            try:  # `here`: executed in this run's state when its worker claims it
                return await remote.run(scope, step, path, key, item,
                                        lambda: run_here(item, key, lambda: None))
            finally:
                gate.release()
        held = True

        def release() -> None:  # once: at the last step's execution, or at the end
            nonlocal held
            if held:
                held = False
                gate.release()

        try:
            return await run_here(item, key, release)
        finally:
            release()

    async def run_here(item: Any, key: str, release: Any) -> Any:
        body = scope.branch(step.get("steps") or [], f"{path}[{key}].", item, release)
        await body.execute()
        return branch_output(body, step)

    tasks = [run.spawn(branch(item, key)) for item, key in zip(items, keys, strict=True)]
    if with_.get("failureMode", "fail_fast") == "all_settled":
        results = await asyncio.gather(*tasks, return_exceptions=True)
    else:
        try:
            results = list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    waits = [request for r in results if isinstance(r, WaitingForInput)
             for request in r.requests]
    if waits:
        raise WaitingForInput(waits)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, StepFailure):
            raise result
    failed = [{"itemKey": key, "causeCode": r.cause, "failedStepPath": r.step_path or path,
               "message": r.message}
              for key, r in zip(keys, results, strict=True) if isinstance(r, StepFailure)]
    if failed and len(failed) == len(items):
        causes = {r.cause for r in results if isinstance(r, StepFailure)}
        raise StepFailure(causes.pop() if len(causes) == 1 else "step_failed",
                          f"all {len(items)} branches failed: " + "; ".join(
                              f"{f['failedStepPath']}: {f['message']}" for f in failed),
                          failed[0]["failedStepPath"], details={"failedBranches": failed})
    order = [i for i in (range(len(items)) if fan_in.get("order", "input") == "input" else
                         sorted(range(len(items)), key=lambda i: keys[i]))
             if not isinstance(results[i], StepFailure)]
    output = [results[i] for i in order]
    envelope, inline = await run.envelope(output, "parallel", {"mode": "array"})
    committed = await run.record([NewEvent("StepCompleted", {
        "stepId": step["id"], "uses": "parallel", "visit": visit, "attempt": 1,
        "branches": [keys[i] for i in order], **({"failedBranches": failed} if failed else {}),
        "envelope": envelope}, path)], artifacts=inline)
    return output, committed


class Waiting:
    """The group's branches that wait for a person. A branch that waits while others
    still execute waits for its answer (lwtool.runtime.answers) and goes on when it
    comes; once no branch executes any more, every waiting one gives up and the group
    passes their waits up (WaitingForInput): the answers then reach it as they reach
    any waiting step."""

    def __init__(self, branches: int) -> None:
        self.executing = branches
        self._parked: set[asyncio.Future[bool]] = set()

    async def for_answer(self, run: Any, requests: list[dict[str, Any]]) -> bool:
        """Wait for an answer to `requests` (True) or for the group to settle (False)."""
        from lwtool.runtime.answers import answers_of, paths_of

        self.executing -= 1
        settled: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._parked.add(settled)
        self._settle()
        answered = answers_of(run).given(paths_of(requests, run.run_id))
        either: list[asyncio.Future[Any]] = [answered, settled]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._parked.discard(settled)
            answered.cancel()
        self.executing += 1  # going on, or ending (`ended` counts it out)
        return answered.done() and not answered.cancelled()

    def ended(self) -> None:
        """A branch is done: finished, failed, or given up waiting."""
        self.executing -= 1
        self._settle()

    def _settle(self) -> None:
        if self.executing <= 0:
            for parked in self._parked:
                if not parked.done():
                    parked.set_result(False)


def branch_output(body: Any, step: dict[str, Any]) -> Any:
    """What a finished branch gives the fan-in: its `fanIn.outputStep`'s last output,
    else that of the body's last step to complete."""
    output_step = ((step.get("with") or {}).get("fanIn") or {}).get("outputStep")
    if output_step:
        outputs = body.outputs.get(output_step) or []
        return outputs[-1] if outputs else None
    return body.outputs[body.last_step][-1] if body.last_step else None

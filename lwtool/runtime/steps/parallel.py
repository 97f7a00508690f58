"""parallel: bounded branches over a known array, fanned back in deterministically.

Each branch runs the body as its own scope, with step paths `<parallel>[<key>].<step>`.
Concurrency is bounded by `maxConcurrency` here and by the world's
`max_concurrent_steps` across the run (leaf steps hold a world slot; the coordinating
parallel step does not, so nesting cannot deadlock). `fail_fast` cancels the other
branches at the first failure; `all_settled` lets every branch finish, then fails
naming each failed branch if any did. Completed branches stay committed either way.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lwtool.expr.functions import to_text
from lwtool.runtime.errors import StepFailure
from lwtool.runtime.steps.inputs import resolve
from lwtool.world.base import NewEvent


async def run_parallel(scope: Any, step: dict[str, Any], path: str, visit: int) -> list[Any]:
    from lwtool.runtime.scope import Scope

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
    gate = asyncio.Semaphore(int(with_.get("maxConcurrency", 1)))
    fan_in = with_.get("fanIn") or {}
    output_step = fan_in.get("outputStep")

    async def branch(item: Any, key: str) -> Any:
        await gate.acquire()
        held = True

        def release() -> None:  # once: at the last step's execution, or at the end
            nonlocal held
            if held:
                held = False
                gate.release()

        try:
            body = Scope(run, step.get("steps") or [], f"{path}[{key}].", item,
                         has_item=True, on_last_execution=release)
            await body.execute()
        finally:
            release()
        if output_step:
            outputs = body.outputs.get(output_step) or []
            return outputs[-1] if outputs else None
        return body.outputs[body.last_step][-1] if body.last_step else None

    tasks = [asyncio.create_task(branch(item, key)) for item, key in zip(items, keys,
                                                                          strict=True)]
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
    failures = [r for r in results if isinstance(r, BaseException)]
    for failure in failures:
        if not isinstance(failure, StepFailure):
            raise failure
    if failures:
        paths = [f.step_path or path for f in failures if isinstance(f, StepFailure)]
        raise StepFailure("step_failed", f"{len(failures)} of {len(items)} branches failed: "
                          + "; ".join(f"{f.step_path}: {f.message}" for f in failures
                                      if isinstance(f, StepFailure)), paths[0],
                          details={"failedBranches": paths})
    order = range(len(items)) if fan_in.get("order", "input") == "input" else \
        sorted(range(len(items)), key=lambda i: keys[i])
    output = [results[i] for i in order]
    envelope, inline = await run.envelope(output, "parallel", {"mode": "array"})
    await run.record([NewEvent("StepCompleted", {
        "stepId": step["id"], "uses": "parallel", "visit": visit, "attempt": 1,
        "branches": [keys[i] for i in order], "envelope": envelope}, path)], artifacts=inline)
    return output

"""map: sharded fan-out over child runs.

`with: {items, itemKey, workflow, batch: {maxItems}, maxConcurrency, toleratedFailure,
reduce: {workflow, arity}}`. The items (an array) are cut into shards of `maxItems` in
order (the same items give the same shards); shard i is a child run of `workflow` with
input `{items: [its batch]}` at path `<step path>.shard[i]`, so its id derives from
this run's id and the shard (lwtool.record.ids.child_run_id), exactly as an invoke's
does: a replay after a kill at any point finds each shard it started, a finished one
answers from its log, and only shards that had not finished run (a failed shard stays
failed, unless `lwtool retry` reopened this step). At most `maxConcurrency` shards run
at once; under `lwtool worker` they are queued for any worker (the scheduler's
`run.children` does the starting, lwtool.runtime.children).

Failures count per item: a failed shard fails its items. Over `toleratedFailure`
(`{percent}` of the items or `{count}`; default 0) the step fails with
`map_tolerance_exceeded` naming the failed items, and no further shard starts; within
it the run goes on. The output is `{results: [each completed shard's output, in item
order], failed: [{key, cause, shard}]}`, or with `reduce` the root of a fixed tree: the
leaves are the completed shards' outputs, each node a child run of the reduce workflow
with input `{items: [up to arity outputs]}` at `<step path>.reduce[level.i]`.

The parent's log grows with the shards, never with the items: a `MapShardEnded` note a
shard (its index, child run id, item count, status)."""

from __future__ import annotations

import asyncio
from typing import Any

from lwtool.record.errors import StepFailure
from lwtool.record.maps import SHARD_EVENT
from lwtool.record.run_state import LOOP_SHARED
from lwtool.steps.inputs import resolve
from lwtool.steps.outputs import checked_step_output
from lwtool.world.base import NewEvent

DEFAULT_CONCURRENCY = 4
DEFAULT_ARITY = 10
NAMED_FAILURES = 100  # failed items a failure's details name at most
NAMED_IN_MESSAGE = 10  # ... and its message


def resolve_input(scope: Any, step: dict[str, Any], expression_scope: dict[str, Any],
                  path: str) -> Any:
    """The items, checked to be an array, with their keys: `{items, keys}`."""
    settings = step.get("with") or {}
    items = resolve(settings.get("items"), expression_scope, path, "with.items")
    if not isinstance(items, list):
        raise StepFailure("step_schema_error", f"with.items is {type(items).__name__}, not "
                          "an array: map needs the items as an array", path)
    template = settings.get("itemKey")
    if template is None:
        keys = [str(index) for index in range(len(items))]
    else:
        keys = [_key(resolve(template, {**expression_scope, "item": item}, path,
                             "with.itemKey"), index, path)
                for index, item in enumerate(items)]
    seen: dict[str, int] = {}
    for index, key in enumerate(keys):
        if key in seen:
            raise StepFailure("step_schema_error", f"with.itemKey gives items {seen[key]} and "
                              f"{index} the same key '{key}': keys must be unique (no shard "
                              "was started)", path)
        seen[key] = index
    return {"items": items, "keys": keys}


def _key(value: Any, index: int, path: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise StepFailure("step_schema_error", f"with.itemKey of item {index} is "
                          f"{type(value).__name__}, not a string or number", path)
    return str(value)


async def execute(scope: Any, step: dict[str, Any], path: str, value: Any,
                  expression_scope: dict[str, Any]) -> tuple[Any, list[NewEvent]]:
    run = scope.run
    if run.children is None:
        raise StepFailure("runtime_config_error", "this run cannot start child runs (its "
                          "scheduler gives it no way to)", path)
    settings = step.get("with") or {}
    items, keys = value["items"], value["keys"]
    size = int((settings.get("batch") or {}).get("maxItems") or 1)
    shards = [(start, items[start:start + size]) for start in range(0, len(items), size)]
    # `lwtool retry` reopened this step: its failed shards run again (else they stand)
    again = path in run.journal.retry_base
    done = await _shards(run, path, str(settings.get("workflow", "")), shards, keys,
                         int(settings.get("maxConcurrency") or DEFAULT_CONCURRENCY),
                         _tolerated(settings.get("toleratedFailure"), len(items)), again)
    results, failed = done
    reduce = settings.get("reduce")
    if isinstance(reduce, dict):
        output = await _reduce(run, path, str(reduce.get("workflow", "")),
                               int(reduce.get("arity") or DEFAULT_ARITY), results, again)
    else:
        output = {"results": results, "failed": failed}
    return checked_step_output(run, step, output, "the map's output", path), []


def _tolerated(setting: Any, total: int) -> int:
    """How many failed items the step tolerates."""
    if not isinstance(setting, dict):
        return 0
    if "count" in setting:
        return int(setting["count"])
    return int(float(setting.get("percent", 0)) * total // 100)


async def _shards(run: Any, path: str, version_id: str,
                  shards: list[tuple[int, list[Any]]], keys: list[str], width: int,
                  tolerated: int, again: bool) -> tuple[list[Any], list[dict[str, Any]]]:
    """Run the shards, at most `width` at once; (the completed shards' outputs in
    order, the failed items). Over the tolerance: no further shard starts, and the
    step fails once the running ones end. `width` runners take the shards in order:
    tasks (and the shards' inputs in flight) are bounded by `width`, not the shards."""
    outputs: list[Any] = [None] * len(shards)
    ok = [False] * len(shards)
    failed: list[dict[str, Any]] = []
    next_shard = iter(range(len(shards)))

    async def one(index: int) -> None:
        start, batch = shards[index]
        shard_path = f"{path}.shard[{index}]"
        try:
            outputs[index] = await run.children.invoke(version_id, {"items": batch},
                                                       shard_path, again=again)
            ok[index] = True
            status = "completed"
        except StepFailure as failure:
            if failure.cause in ("cancelled",):
                raise
            failed.extend({"key": keys[start + n], "cause": failure.cause, "shard": index}
                          for n in range(len(batch)))
            status = "failed"
        # committed as the shard ends (no fsync: the child's log is the truth), not
        # with the parent's next commit: the shards' progress shows while they run
        run.note([NewEvent(SHARD_EVENT, {
            "shard": index, "childRunId": run.children.child_id(shard_path),
            "items": len(batch), "status": status}, path)], defer=False)

    async def runner() -> None:
        # Its own task's context: the shards run beside each other on this loop, so
        # their commits go to the commit thread instead of blocking the loop (a
        # worker's runs, LOOP_SHARED)
        LOOP_SHARED.set(True)
        for index in next_shard:  # shared: each shard is taken once, in order
            if len(failed) > tolerated:
                return
            await one(index)

    await asyncio.gather(*(runner() for _ in range(max(1, min(width, len(shards))))))
    failed.sort(key=lambda f: f["shard"])  # stable: within a shard, in item order
    if len(failed) > tolerated:
        named = ", ".join(f["key"] for f in failed[:NAMED_IN_MESSAGE])
        more = f" and {len(failed) - NAMED_IN_MESSAGE} more" \
            if len(failed) > NAMED_IN_MESSAGE else ""
        raise StepFailure("map_tolerance_exceeded", f"{len(failed)} of {len(keys)} items "
                          f"failed, over the {tolerated} tolerated: {named}{more}", path,
                          details={"failedItems": failed[:NAMED_FAILURES]})
    return [outputs[i] for i in range(len(shards)) if ok[i]], failed


async def _shared(work: Any) -> Any:
    """`work` (a child run) in a task of its own that shares the loop (LOOP_SHARED)."""
    LOOP_SHARED.set(True)
    return await work


async def _reduce(run: Any, path: str, version_id: str, arity: int, leaves: list[Any],
                  again: bool) -> Any:
    """The root of a fixed tree over `leaves`: level by level, each group of `arity`
    outputs one reduce run (a single leaf, or none, still gets one node)."""
    arity = max(2, arity)
    level, outputs = 0, list(leaves)
    while True:
        groups = [outputs[i:i + arity] for i in range(0, len(outputs), arity)] or [[]]
        outputs = await asyncio.gather(*(
            _shared(run.children.invoke(version_id, {"items": group},
                                        f"{path}.reduce[{level}.{i}]", again=again))
            for i, group in enumerate(groups)))
        if len(outputs) == 1:
            return outputs[0]
        level += 1

"""A run's map steps as one summary each, from the `MapShardEnded` records of its log
(lwtool.steps.map_step): the shards counted by status, their items, and each shard's
child run. The inspector and the OTel export show a map this way: a step with shard
counts and a link to each shard, never a row an item."""

from __future__ import annotations

from collections import Counter
from typing import Any

SHARD_EVENT = "MapShardEnded"


def map_summaries(events: list[Any]) -> list[dict[str, Any]]:
    """[{step, shards: {status: count}, total, items, runs: [{shard, runId, items,
    status}]}] for each map step path, in the order their first shard ended; a shard
    ended again (`lwtool retry`) counts by its last end."""
    by_step: dict[str, dict[int, dict[str, Any]]] = {}
    for event in events:
        if event.type != SHARD_EVENT:
            continue
        payload = event.payload
        by_step.setdefault(event.step_path or "", {})[int(payload.get("shard", 0))] = {
            "shard": int(payload.get("shard", 0)), "runId": str(payload.get("childRunId")),
            "items": int(payload.get("items", 0)), "status": str(payload.get("status"))}
    summaries = []
    for step, shards in by_step.items():
        runs = [shards[index] for index in sorted(shards)]
        summaries.append({"step": step, "runs": runs, "total": len(runs),
                          "shards": dict(sorted(Counter(r["status"] for r in runs).items())),
                          "items": sum(r["items"] for r in runs)})
    return summaries

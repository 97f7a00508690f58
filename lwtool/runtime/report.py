"""Usage and cost per step and per run, derived from harness.model.responded events.

`costUsd` is null when every model call in scope was unpriced (no entry in litellm's
price registry, or the offline model), not free; 0 is a real zero (no model calls).
litellm is imported only when there is a call it could price.
"""

from __future__ import annotations

import os
from typing import Any

from lwtool.harness.offline import OFFLINE_MODEL
from lwtool.world.base import Event

_TOKENS = ("inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens")


def _empty() -> dict[str, Any]:
    return {**dict.fromkeys(_TOKENS, 0), "costUsd": None, "pricedCalls": 0, "unpricedCalls": 0}


def price(provider: str, model_id: str, usage: dict[str, int]) -> float | None:
    """USD for one call from litellm's price map, or None when it has no price."""
    if model_id == OFFLINE_MODEL:
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm

        litellm.suppress_debug_info = True  # else an unknown model prints to stdout
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=f"{provider}/{model_id}" if provider else model_id,
            prompt_tokens=int(usage.get("inputTokens", 0)),
            completion_tokens=int(usage.get("outputTokens", 0)))
    except Exception:  # noqa: BLE001 - an unknown model is simply unpriced
        return None
    return float(prompt_cost) + float(completion_cost)


def _add(total: dict[str, Any], usage: dict[str, int], cost: float | None) -> None:
    for key in _TOKENS:
        total[key] += int(usage.get(key, 0))
    if cost is None:
        total["unpricedCalls"] += 1
    else:
        total["pricedCalls"] += 1
        total["costUsd"] = (total["costUsd"] or 0.0) + cost


def usage_report(events: list[Event]) -> dict[str, Any]:
    steps: dict[str, dict[str, Any]] = {}
    run = _empty()
    calls = 0
    for event in events:
        if event.type != "harness.model.responded":
            continue
        calls += 1
        payload = event.payload
        usage = (payload.get("response") or {}).get("usage") or {}
        model = payload.get("model") or {}
        cost = price(model.get("provider", ""), model.get("modelId", ""), usage)
        step = steps.setdefault(payload.get("stepPath") or event.step_path or "?", _empty())
        _add(step, usage, cost)
        _add(run, usage, cost)
    if calls == 0:
        run["costUsd"] = 0.0
    return {"run": run, "steps": steps}


def failed_branches(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    """{parallel group path: its failedBranches} for all_settled groups that completed
    with some branches failed."""
    return {event.step_path or "?": list(event.payload["failedBranches"])
            for event in events
            if event.type == "StepCompleted" and event.payload.get("failedBranches")}

"""Usage and cost per step and per run, derived from harness.model.responded events.

Cached input tokens are priced at the provider's cached rate where litellm knows it.
`costUsd` is null when every model call in scope was unpriced (no entry in litellm's
price registry, or the offline model), not free; 0 is a real zero (no model calls).
litellm is imported only when there is a call it could price.
"""

from __future__ import annotations

import os
from typing import Any

from lwtool.world.base import Event

LWTOOL_PROVIDER = "lwtool"  # models lwtool answers itself: never priced
TOKENS = ("inputTokens", "outputTokens", "cachedInputTokens", "reasoningTokens")


def empty_totals() -> dict[str, Any]:
    """Token counts, costUsd (None: nothing priced yet) and priced/unpriced call counts."""
    return {**dict.fromkeys(TOKENS, 0), "costUsd": None, "pricedCalls": 0, "unpricedCalls": 0}


def price(provider: str, model_id: str, usage: dict[str, int]) -> float | None:
    """USD for one call from litellm's price map, or None when it has no price (the
    models lwtool answers itself, provider `lwtool`: offline and scripted)."""
    if provider == LWTOOL_PROVIDER:
        return None
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # (as calls.providers)
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    try:
        import litellm

        litellm.suppress_debug_info = True  # else an unknown model prints to stdout
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=f"{provider}/{model_id}" if provider else model_id,
            prompt_tokens=int(usage.get("inputTokens", 0)),
            completion_tokens=int(usage.get("outputTokens", 0)),
            cache_read_input_tokens=int(usage.get("cachedInputTokens", 0)))  # cached rate
    except Exception:  # noqa: BLE001 - an unknown model is simply unpriced
        return None
    return float(prompt_cost) + float(completion_cost)


def reply_usage(payload: dict[str, Any]) -> tuple[dict[str, int], float | None]:
    """A harness.model.responded payload's token usage and its cost (None: unpriced)."""
    usage = (payload.get("response") or {}).get("usage") or {}
    model = payload.get("model") or {}
    return usage, price(model.get("provider", ""), model.get("modelId", ""), usage)


def add_usage(total: dict[str, Any], usage: dict[str, int], cost: float | None) -> None:
    """Count one model call into `total` (an `empty_totals()`)."""
    for key in TOKENS:
        total[key] += int(usage.get(key, 0))
    if cost is None:
        total["unpricedCalls"] += 1
    else:
        total["pricedCalls"] += 1
        total["costUsd"] = (total["costUsd"] or 0.0) + cost


def merge_totals(total: dict[str, Any], part: dict[str, Any]) -> None:
    """Add `part` (an `empty_totals()` shape) into `total`. Only priced calls add a
    cost: a part without calls reports 0, which must not make an unpriced total free."""
    for key in (*TOKENS, "pricedCalls", "unpricedCalls"):
        total[key] += int(part.get(key, 0))
    if part.get("pricedCalls") and part.get("costUsd") is not None:
        total["costUsd"] = (total["costUsd"] or 0.0) + float(part["costUsd"])


def usage_report(events: list[Event]) -> dict[str, Any]:
    steps: dict[str, dict[str, Any]] = {}
    run = empty_totals()
    calls = 0
    for event in events:
        if event.type != "harness.model.responded":
            continue
        calls += 1
        usage, cost = reply_usage(event.payload)
        step = steps.setdefault(event.payload.get("stepPath") or event.step_path or "?",
                                empty_totals())
        add_usage(step, usage, cost)
        add_usage(run, usage, cost)
    if calls == 0:
        run["costUsd"] = 0.0
    return {"run": run, "steps": steps}


def failed_branches(events: list[Event]) -> dict[str, list[dict[str, Any]]]:
    """{parallel group path: its failedBranches} for all_settled groups that completed
    with some branches failed."""
    return {event.step_path or "?": list(event.payload["failedBranches"])
            for event in events
            if event.type == "StepCompleted" and event.payload.get("failedBranches")}

"""A run's budget (`--max-tokens`, `--max-cost-usd`, a definition's `runtime.budget`):
before each new model call, the run's committed model usage is held against it; once
it is spent no call starts and the step fails with cause `budget_exceeded`, naming what
was spent (an lwtool extension: the Little Workflow spec defers budgets).

Tokens are input plus output tokens. Cost is litellm's price of each reply; lwtool's
own models (offline, scripted) cost nothing. A reply litellm has no price for makes the
spend unknown: with a cost budget, no further call starts, and the failure says so,
rather than letting an unknown spend pass as within budget.

A budget covers a run and what it stands on: a planned run's planner session, a
pipeline's orchestrator session, planner sessions and sub-runs (all held against the
pipeline's one budget), and the branches of a PostgreSQL run that other workers
execute. Where others commit under the same budget, its `source` (`shared`) reads
back every committed reply before each new call; a run alone counts its own replies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lwtool.record.report import LWTOOL_PROVIDER, reply_usage


@dataclass
class Budget:
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    tokens: int = 0  # spent so far (committed replies)
    cost_usd: float = 0.0
    unpriced: list[str] = field(default_factory=list)  # models of replies without a price
    # every committed reply under this budget, when other runs or processes share it
    source: Callable[[], Iterable[dict[str, Any]]] | None = None

    @classmethod
    def of(cls, value: Any) -> Budget | None:
        """From `{maxTokens, maxCostUsd}` (run options, a definition); None for none."""
        if not isinstance(value, dict):
            return None
        tokens, cost = value.get("maxTokens"), value.get("maxCostUsd")
        if tokens is None and cost is None:
            return None
        for name, limit in (("maxTokens", tokens), ("maxCostUsd", cost)):
            # NaN passes every comparison: a NaN budget would hold nothing back
            if limit is not None and (isinstance(limit, bool) or not isinstance(
                    limit, (int, float)) or not math.isfinite(limit) or limit < 0):
                raise ValueError(f"budget {name} must be a finite number of at least 0, "
                                 f"not {limit!r}")
        return cls(int(tokens) if tokens is not None else None,
                   float(cost) if cost is not None else None)

    def count(self, responded: dict[str, Any]) -> None:
        """Add one committed `harness.model.responded` payload."""
        usage, cost = reply_usage(responded)
        self.tokens += int(usage.get("inputTokens", 0)) + int(usage.get("outputTokens", 0))
        model = responded.get("model") or {}
        if cost is not None:
            self.cost_usd += cost
        elif model.get("provider") != LWTOOL_PROVIDER:
            self.unpriced.append(f"{model.get('provider')}/{model.get('modelId')}")

    def shared(self, world: Any, root: str, own: str) -> Budget:
        """Hold this budget against every reply committed under `root` (a pipeline run,
        a planned run: lwtool.record.rollup.linked) and by `own`, read back from the
        world before each new call; counted once now."""
        from lwtool.record.rollup import replies_under

        self.source = lambda: replies_under(world, root, own)
        self.refresh()
        return self

    def refresh(self) -> None:
        """Recount from `source` (nothing to do for a budget of one run alone)."""
        if self.source is None:
            return
        self.tokens, self.cost_usd, self.unpriced = 0, 0.0, []
        for payload in self.source():
            self.count(payload)

    def spent(self) -> str | None:
        """Why no further call may start (None: within budget)."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return (f"the token budget is spent: {self.tokens:,} tokens used of "
                    f"{self.max_tokens:,} (--max-tokens)")
        if self.max_cost_usd is not None and self.cost_usd >= self.max_cost_usd:
            return (f"the cost budget is spent: ${self.cost_usd:.6f} of "
                    f"${self.max_cost_usd:.6f} (--max-cost-usd)")
        if self.max_cost_usd is not None and self.unpriced:
            names = ", ".join(sorted(set(self.unpriced)))
            return (f"the cost budget (${self.max_cost_usd:.6f}) cannot be held: "
                    f"{len(self.unpriced)} reply(ies) have no price ({names}), so the "
                    f"spend is unknown (${self.cost_usd:.6f} priced)")
        return None


def run_budget(value: Any, world: Any, run_id: str, links: dict[str, Any] | None,
               elsewhere: bool, replies: Iterable[dict[str, Any]] = ()) -> Budget | None:
    """A workflow run's budget (None without one): shared with its pipeline or the run
    that invoked it (held against the run at the top, `links.rootRunId`, else
    `links.parentRunId`), with its planner session
    (`links.plannerRunId`), or with the workers executing its branches (`elsewhere`);
    else counted from the run's own committed `replies`."""
    budget = Budget.of(value)
    if budget is None:
        return None
    links = links or {}
    root = str(links.get("rootRunId") or links.get("parentRunId") or run_id)
    if root != run_id or links.get("plannerRunId") or elsewhere:
        return budget.shared(world, root, run_id)
    for reply in replies:
        budget.count(reply)
    return budget

"""A run's budget (`--max-tokens`, `--max-cost-usd`, a definition's `runtime.budget`):
before each new model call, the run's committed model usage is held against it; once
it is spent no call starts and the step fails with cause `budget_exceeded`, naming what
was spent (an lwtool extension: the Little Workflow spec defers budgets).

Tokens are input plus output tokens. Cost is litellm's price of each reply; lwtool's
own models (offline, scripted) cost nothing. A reply litellm has no price for makes the
spend unknown: with a cost budget, no further call starts, and the failure says so,
rather than letting an unknown spend pass as within budget.
"""

from __future__ import annotations

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

    @classmethod
    def of(cls, value: Any) -> Budget | None:
        """From `{maxTokens, maxCostUsd}` (run options, a definition); None for none."""
        if not isinstance(value, dict):
            return None
        tokens, cost = value.get("maxTokens"), value.get("maxCostUsd")
        if tokens is None and cost is None:
            return None
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

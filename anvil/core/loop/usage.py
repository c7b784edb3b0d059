"""What the session's model calls cost: running totals, and the usage event each call reports.

Costs are litellm's prices for each kind of token (see the model adapter). A call whose price is unknown (a
local model) adds no cost and is counted in ``unpriced_calls``; once such a call was made, the total cost is
None until some call's price is known, so "unknown" never shows as $0 (no calls at all cost a known $0).
"""

from __future__ import annotations

from typing import Any

from anvil.core.events import UsageReport
from anvil.core.model.protocol import Completion, Usage

#: the token counts kept per session, as UsageReport and the json output name them
TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


class UsageTotals:
    def __init__(self) -> None:
        #: tokens, cost (USD, None while unknown) and calls of unknown price so far; front ends read it,
        #: and resuming a session restores it
        self.totals: dict[str, Any] = {**dict.fromkeys(TOKEN_KEYS, 0), "cost": None, "unpriced_calls": 0}

    def add(self, completion: Completion) -> UsageReport:
        usage = completion.usage or Usage()
        for key in TOKEN_KEYS:
            self.totals[key] += getattr(usage, key)
        self._add_cost(completion.cost, unpriced=1 if completion.cost is None else 0)
        t = self.totals
        return UsageReport(usage.prompt_tokens, usage.completion_tokens, completion.cost, t["prompt_tokens"],
                           t["completion_tokens"], self.total_cost, usage.cache_read_tokens, usage.cache_write_tokens,
                           usage.reasoning_tokens, t["cache_read_tokens"], t["cache_write_tokens"],
                           t["reasoning_tokens"], t["unpriced_calls"])

    def merge(self, other: dict[str, Any]) -> None:
        """Add another agent's totals (a sub-agent's, as :meth:`summary` gives them)."""
        for key in TOKEN_KEYS:
            self.totals[key] += int(other.get(key) or 0)
        cost = other.get("cost")
        self._add_cost(None if cost is None else float(cost), unpriced=int(other.get("unpriced_calls") or 0))

    def restore(self, totals: dict[str, Any]) -> None:
        """Start from a resumed session's totals."""
        for key in TOKEN_KEYS:
            self.totals[key] = int(totals.get(key) or 0)
        self.totals["cost"] = totals.get("cost")
        self.totals["unpriced_calls"] = int(totals.get("unpriced_calls") or 0)

    def summary(self) -> dict[str, Any]:
        """The totals as plain values (a sub-agent's report to its parent)."""
        return {**{key: int(self.totals[key]) for key in TOKEN_KEYS}, "cost": self.total_cost,
                "unpriced_calls": int(self.totals["unpriced_calls"])}

    @property
    def total_cost(self) -> float | None:
        cost = self.totals["cost"]  # None: no call had a known price
        if cost is None:
            return None if self.totals["unpriced_calls"] else 0.0
        return round(float(cost), 6)

    def _add_cost(self, cost: float | None, *, unpriced: int) -> None:
        self.totals["unpriced_calls"] += unpriced
        if cost is not None:
            self.totals["cost"] = (self.totals["cost"] or 0.0) + cost

"""What the session's model calls cost: running totals, and the usage event each call reports."""

from __future__ import annotations

from anvil.core.events import UsageReport
from anvil.core.model.protocol import Completion


class UsageTotals:
    def __init__(self) -> None:
        #: tokens and cost (USD) so far; front ends read it, and resuming a session restores it
        self.totals: dict[str, float] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}

    def add(self, completion: Completion) -> UsageReport:
        usage = completion.usage
        prompt = usage.prompt_tokens if usage else 0
        output = usage.completion_tokens if usage else 0
        self.totals["prompt_tokens"] += prompt
        self.totals["completion_tokens"] += output
        self.totals["cost"] += completion.cost or 0.0
        return UsageReport(prompt, output, completion.cost, int(self.totals["prompt_tokens"]),
                           int(self.totals["completion_tokens"]), round(float(self.totals["cost"]), 6))

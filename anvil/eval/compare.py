"""``anvil eval compare A.jsonl B.jsonl``: what changed between two result sets, B against A.

Per task × model × workflow: the success rate before and after (a group that got worse is a regression, one
that got better an improvement), and the change in median cost and median time; then the totals, and the groups
found in only one of the files. The exit code is 1 when anything regressed, so a CI job can check that a change
to anvil did not make it worse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anvil.eval.results import Group, money, rate_text, seconds, short_model, summarise


@dataclass(frozen=True)
class Change:
    before: Group
    after: Group

    @property
    def verdict(self) -> str:
        if self.after.rate < self.before.rate:
            return "regressed"
        if self.after.rate > self.before.rate:
            return "improved"
        return "same"

    @property
    def cost_delta(self) -> float | None:
        if self.before.median_cost is None or self.after.median_cost is None:
            return None
        return self.after.median_cost - self.before.median_cost

    @property
    def time_delta(self) -> float | None:
        if self.before.median_time is None or self.after.median_time is None:
            return None
        return self.after.median_time - self.before.median_time


@dataclass(frozen=True)
class Comparison:
    changes: list[Change]
    only_before: list[Group]
    only_after: list[Group]
    totals: tuple[Group | None, Group | None]

    @property
    def regressions(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "regressed"]

    @property
    def improvements(self) -> list[Change]:
        return [c for c in self.changes if c.verdict == "improved"]


def _everything(records: list[dict[str, Any]]) -> Group | None:
    if not records:
        return None
    return summarise([{**r, "task": "*", "model": "*", "workflow": "*"} for r in records])[0]


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> Comparison:
    old = {g.key: g for g in summarise(before)}
    new = {g.key: g for g in summarise(after)}
    changes = [Change(old[key], new[key]) for key in old if key in new]
    return Comparison(changes, [g for k, g in old.items() if k not in new], [g for k, g in new.items() if k not in old],
                      (_everything(before), _everything(after)))


def _delta(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    sign = "+" if value > 0 else "−" if value < 0 else "±"
    shown = f"${abs(value):.4f}" if unit == "$" else f"{abs(value):.1f}s"
    return f"{sign}{shown}"


def comparison_table(result: Comparison) -> Any:
    from rich.table import Table

    table = Table(title="B against A, per task × model × workflow", title_justify="left")
    for name in ("task", "model", "workflow", "success A → B", "change", "median cost", "median time"):
        table.add_column(name, justify="right" if name.startswith("median") else "left")
    colours = {"regressed": "red", "improved": "green", "same": "dim"}
    for change in sorted(result.changes, key=lambda c: ("regressed", "improved", "same").index(c.verdict)):
        b, a = change.before, change.after
        table.add_row(b.task, short_model(b.model), b.workflow, f"{rate_text(b)} → {rate_text(a)}",
                      f"[{colours[change.verdict]}]{change.verdict}[/]",
                      f"{money(a.median_cost)} ({_delta(change.cost_delta, '$')})",
                      f"{seconds(a.median_time)} ({_delta(change.time_delta, 's')})")
    return table


def comparison_lines(result: Comparison, names: tuple[str, str]) -> list[str]:
    """The sentences under the table: flips, totals, groups in one file only."""
    lines = []
    for change in result.regressions:
        b, a = change.before, change.after
        lines.append(f"Regressed: {b.task} with {b.model} ({b.workflow}): {rate_text(b)} → {rate_text(a)}.")
    for change in result.improvements:
        b, a = change.before, change.after
        lines.append(f"Improved: {b.task} with {b.model} ({b.workflow}): {rate_text(b)} → {rate_text(a)}.")
    before, after = result.totals
    if before is not None and after is not None:
        lines.append(f"In all: {rate_text(before)} → {rate_text(after)} successful; cost {money(before.total_cost)} → "
                     f"{money(after.total_cost)}; median time {seconds(before.median_time)} → "
                     f"{seconds(after.median_time)}.")
    for group in result.only_before:
        lines.append(f"Only in {names[0]}: {group.task} with {group.model} ({group.workflow}).")
    for group in result.only_after:
        lines.append(f"Only in {names[1]}: {group.task} with {group.model} ({group.workflow}).")
    if not result.regressions:
        lines.append("No regressions.")
    return lines

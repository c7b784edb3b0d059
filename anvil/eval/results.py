"""Eval results: one JSON record per run in a JSONL file, and their summary per task × model × workflow.

Record fields: ``run_id``, ``index`` (its place in the eval's plan), ``task``, ``title``, ``model``,
``workflow``, ``repeat``, ``success`` (the task's verify and check commands passed after the run; for
``expect: blocked``, the run ended blocked), ``blocked``, ``status`` (the task's: done, failed, blocked,
interrupted; ``error`` when the run could not happen), ``stop_reason``, ``exit_code``, ``iterations``, ``tokens``
(``input``, ``output``, ``cached``), ``cost`` (USD, null when unknown), ``wall_time`` and ``time_to_first_edit``
(seconds), ``checks``, ``question`` (a blocked run's), ``autofix_files``, ``model_fixed``, ``diff`` (what the run
changed), ``session`` (its session file), ``error``.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO


class ResultsError(Exception):
    """A results file that cannot be read; the message names it and the line."""


def write_record(out: TextIO, record: dict[str, Any]) -> None:
    """One record, one line, written at once: an interrupted eval keeps every finished run."""
    out.write(json.dumps(record, ensure_ascii=False) + "\n")
    out.flush()


def read_records(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ResultsError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise ResultsError(f"{path}, line {number}: not JSON. Is it an anvil eval results file?") from None
        if not isinstance(record, dict) or "task" not in record or "model" not in record:
            raise ResultsError(f"{path}, line {number}: not a run record (no task or model).")
        records.append(record)
    if all("index" in r for r in records):  # the order the eval planned the runs in, not the one they ended in
        records.sort(key=lambda r: r["index"])
    return records


@dataclass(frozen=True)
class Group:
    """The runs of one task with one model and workflow, summed up."""

    task: str
    model: str
    workflow: str
    runs: int
    successes: int
    blocked: int
    errors: int
    median_cost: float | None
    median_time: float | None
    median_iterations: float | None
    total_cost: float | None

    @property
    def rate(self) -> float:
        return self.successes / self.runs if self.runs else 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return self.task, self.model, self.workflow


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _total(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def summarise(records: list[dict[str, Any]], by: tuple[str, ...] = ("task", "model", "workflow")) -> list[Group]:
    """One group per distinct ``by``, ordered task by task, then model by model, each in the order it first
    appears in ``records``; with ``by=("model", "workflow")`` the task is ``*``."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    first: dict[str, dict[str, int]] = {k: {} for k in by}
    for record in records:
        key = tuple(str(record.get(k, "none")) for k in by)
        for name, value in zip(by, key, strict=True):
            first[name].setdefault(value, len(first[name]))
        groups.setdefault(key, []).append(record)
    result = []
    for key, runs in sorted(groups.items(), key=lambda item: [first[n][v] for n, v in zip(by, item[0], strict=True)]):
        named = dict(zip(by, key, strict=True))
        result.append(Group(
            task=named.get("task", "*"), model=named.get("model", "*"), workflow=named.get("workflow", "*"),
            runs=len(runs), successes=sum(1 for r in runs if r.get("success")),
            blocked=sum(1 for r in runs if r.get("blocked")),
            errors=sum(1 for r in runs if r.get("status") == "error"),
            median_cost=_median(r.get("cost") for r in runs), median_time=_median(r.get("wall_time") for r in runs),
            median_iterations=_median(r.get("iterations") for r in runs),
            total_cost=_total(r.get("cost") for r in runs)))
    return result


def short_model(model: str) -> str:
    """A model as tables show it: ``scripted:/long/path/solver`` is ``scripted:solver``."""
    if model.startswith("scripted:"):
        name = Path(model.partition(":")[2]).name
        return f"scripted:{name.removesuffix('.json')}"
    return model


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"


def rate_text(group: Group) -> str:
    return f"{group.rate:.0%} ({group.successes}/{group.runs})"


def summary_table(groups: list[Group], title: str = "anvil eval") -> Any:
    """A rich Table: success rate with its count, median cost, median time, median iterations."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in (("task", "left"), ("model", "left"), ("workflow", "left"), ("success", "right"),
                          ("blocked", "right"), ("median cost", "right"), ("median time", "right"),
                          ("iterations", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for g in groups:
        colour = "green" if g.rate == 1 else "red" if g.rate == 0 else "yellow"
        iterations = "-" if g.median_iterations is None else f"{g.median_iterations:g}"
        table.add_row(g.task, short_model(g.model), g.workflow, f"[{colour}]{rate_text(g)}[/]", str(g.blocked),
                      money(g.median_cost), seconds(g.median_time), iterations)
    return table

"""The eval's progress line: a bar, done / running / failed, the elapsed time and the cost so far (rich)."""

from __future__ import annotations

import threading
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn


class ProgressDisplay:
    """Fed by the backends' threads (:class:`~anvil.eval.backends.Tracker`) and by the finished records."""

    def __init__(self, total: int, console: Console) -> None:
        self._lock = threading.Lock()
        self.running: set[str] = set()
        self.costs: dict[str, float] = {}
        self.done = self.failed = 0
        self.progress = Progress(SpinnerColumn(), TextColumn("[bold]anvil eval[/]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
                                 transient=False)
        self._bar = self.progress.add_task("eval", total=total, status=self.status())

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._refresh()
        self.progress.stop()

    @property
    def cost(self) -> float:
        return sum(self.costs.values())

    def status(self) -> str:
        return (f"done {self.done} · running {len(self.running)} · failed {self.failed} · "
                f"cost so far ${self.cost:.4f}")

    def started(self, run_id: str) -> None:
        with self._lock:
            self.running.add(run_id)
        self._refresh()

    def cost_update(self, run_id: str, cost: float | None) -> None:
        """A running run's cost so far."""
        if cost is None:
            return
        with self._lock:
            self.costs[run_id] = cost
        self._refresh()

    def finished(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.running.discard(record.get("run_id", ""))
            self.done += 1
            self.failed += 0 if record.get("success") else 1
            if record.get("cost") is not None:
                self.costs[record["run_id"]] = record["cost"]
        self.progress.update(self._bar, completed=self.done)
        self._refresh()

    def _refresh(self) -> None:
        self.progress.update(self._bar, status=self.status())

"""Where eval runs execute: this machine, ``--jobs`` at a time (``local``), or a Ray cluster (``ray``).

Runs are independent, so large suites go to an existing distributed engine rather than a home-made one: the Ray
backend submits each run as a Ray task (:func:`~anvil.eval.runner.run_one`, one CPU each) to the cluster in
``RAY_ADDRESS``, or to a local Ray it starts for the eval, and hands back the same records. Both stop cleanly: the
runs in flight are interrupted (anvil ends its turn) and what finished is kept.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from anvil.eval.runner import RunSpec, run_one

RAY_MISSING = ("--backend ray needs Ray on this machine and the cluster: pip install 'anvil[ray]' (or pip install "
               "ray), then run again.")


class BackendError(Exception):
    """The backend cannot run here; one line saying what to do."""


class Tracker(Protocol):
    def started(self, run_id: str) -> None: ...

    def cost_update(self, run_id: str, cost: float | None) -> None: ...


class LocalBackend:
    """Runs in threads of this process, each one an anvil subprocess, ``jobs`` at a time."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.cancel = threading.Event()
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future[dict[str, Any]]] = []

    def run(self, specs: list[RunSpec], tracker: Tracker) -> Iterator[dict[str, Any]]:
        """The records, as the runs finish."""
        self._pool = ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="anvil-eval")
        self._futures = [self._pool.submit(self._one, spec, tracker) for spec in specs]
        pending = set(self._futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
        self._pool.shutdown()

    def _one(self, spec: RunSpec, tracker: Tracker) -> dict[str, Any]:
        if self.cancel.is_set():
            return {"run_id": spec.run_id, "status": "interrupted"}
        tracker.started(spec.run_id)
        return run_one(spec, self.cancel, tracker.cost_update)

    def stop(self) -> None:
        """Interrupt the runs in flight (they end their turn), drop the ones not started, wait for the rest."""
        self.cancel.set()
        for future in self._futures:
            future.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


class RayBackend:
    """Each run a Ray task on the cluster in ``RAY_ADDRESS`` (or a local Ray started for the eval), at most
    ``jobs`` in flight. The suite, its repositories and the output folder must be at the same paths on every
    node (a shared file system), and anvil installed there."""

    name = "ray"

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._inflight: dict[Any, RunSpec] = {}
        self._ray: Any = None
        self._started_here = False

    def _connect(self) -> Any:
        try:
            import ray
        except ImportError:
            raise BackendError(RAY_MISSING) from None
        if not ray.is_initialized():
            address = os.environ.get("RAY_ADDRESS", "")
            self._started_here = not address
            problem = unreachable(address)
            if problem:  # Ray itself would retry for minutes before saying so
                raise BackendError(f"could not connect to Ray ({address}): {problem}. Check RAY_ADDRESS, or unset "
                                   "it to start a local Ray for the eval.")
            try:
                ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR",
                         configure_logging=False)
            except Exception as exc:  # Ray's own errors name the address and the problem
                where = os.environ.get("RAY_ADDRESS") or "a local instance"
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise BackendError(f"could not connect to Ray ({where}): {first}") from None
        self._ray = ray
        return ray

    def run(self, specs: list[RunSpec], tracker: Tracker) -> Iterator[dict[str, Any]]:
        ray = self._connect()
        remote = ray.remote(num_cpus=1, max_retries=0)(run_one)
        queue = list(specs)
        try:
            while queue or self._inflight:
                while queue and len(self._inflight) < self.jobs:
                    spec = queue.pop(0)
                    self._inflight[remote.remote(spec)] = spec
                    tracker.started(spec.run_id)
                done, _ = ray.wait(list(self._inflight), num_returns=1, timeout=0.5)
                for ref in done:
                    spec = self._inflight.pop(ref)
                    yield self._record(ref, spec)
        finally:
            if self._started_here and not self._inflight:
                ray.shutdown()

    def _record(self, ref: Any, spec: RunSpec) -> dict[str, Any]:
        try:
            return dict(self._ray.get(ref))
        except Exception as exc:  # a worker that died, a task Ray could not run
            line = str(exc).strip().splitlines()
            return {"run_id": spec.run_id, "task": spec.task.id, "model": spec.model, "workflow": spec.workflow,
                    "repeat": spec.repeat, "status": "error", "success": False,
                    "error": f"Ray: {line[0][:300] if line else type(exc).__name__}"}

    def stop(self) -> None:
        """Cancel the runs in flight (Ray interrupts them: anvil ends its turn); finished results are kept."""
        ray = self._ray
        if ray is None:
            return
        for ref in list(self._inflight):
            ray.cancel(ref)
        if self._inflight:
            ray.wait(list(self._inflight), num_returns=len(self._inflight), timeout=30)
        self._inflight.clear()
        if self._started_here:
            ray.shutdown()


def unreachable(address: str, timeout: float = 5.0) -> str | None:
    """Why nothing answers at a Ray address (``host:port`` or ``ray://host:port``), or None (also for ``auto``
    and an empty address, which Ray resolves itself)."""
    target = address.removeprefix("ray://").strip()
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        return None
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def backend(name: str, jobs: int) -> LocalBackend | RayBackend:
    return RayBackend(jobs) if name == "ray" else LocalBackend(jobs)

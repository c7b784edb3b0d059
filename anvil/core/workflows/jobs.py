"""Where jobs live, and opening a job's workflow by the name its session or its files give.

Jobs are work files of the project (``.anvil/jobs/<job-id>/`` by default), not configuration: the model writes
them with the ordinary file tools and commands may too. So the jobs directory must lie inside the project and
outside anvil's configuration and git's files, whatever a configuration says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anvil.core.tools.paths import lexical_path
from anvil.core.tools.protected import WHY, classify
from anvil.core.workflows.base import JobError, Workflow
from anvil.core.workflows.phased.workflow import PhasedWorkflow
from anvil.core.workflows.tdd.workflow import TddWorkflow


@dataclass(frozen=True)
class WorkflowKind:
    """How to begin a job of one workflow, and how to open one again. Both take the project root, the job's
    directory and the workflow's settings (plain values); ``start`` also the person's instructions."""

    start: Callable[[Path, Path, str, Any], Workflow]
    open: Callable[[Path, Path, Any], Workflow]
    #: a job cannot start without the person's instructions (a TDD job's plan is a file of the project instead)
    needs_instructions: bool = True


#: the workflows there are, by the name people use (``--workflow NAME``)
WORKFLOWS: dict[str, WorkflowKind] = {
    "phased": WorkflowKind(PhasedWorkflow.start, PhasedWorkflow.open),
    "tdd": WorkflowKind(TddWorkflow.start, TddWorkflow.open, needs_instructions=False),
}


def jobs_root(root: Path, jobs_dir: str, config_dirs: list[Path], data_dir: Path | None) -> Path:
    """The directory jobs go in (``jobs_dir`` against the project ``root``); JobError when it may not hold them."""
    path = lexical_path(jobs_dir, root)
    if path != root and not path.is_relative_to(root):
        raise JobError(f"[workflows] jobs_dir = {jobs_dir!r} is outside the project ({root}). Jobs are the project's "
                       "work files: give a directory inside it, such as .anvil/jobs.")
    kind = classify(path / "job" / "todos.yaml", config_dirs, data_dir)
    if kind is not None:
        raise JobError(f"[workflows] jobs_dir = {jobs_dir!r} is inside {kind} ({WHY[kind]}); jobs are work files, "
                       "written by the model. Give another directory, such as .anvil/jobs.")
    return path


def job_directory(jobs: Path, job_id: str) -> Path:
    """The directory of job ``job_id``; JobError for an id that is not a plain name."""
    if not job_id or "/" in job_id or "\\" in job_id or job_id in {".", ".."} or job_id.startswith("."):
        raise JobError(f"'{job_id}' is not a job id: give the name of a directory in {jobs}.")
    return jobs / job_id


def list_jobs(jobs: Path) -> list[str]:
    """The ids of the jobs in ``jobs``, newest first (ids sort by time)."""
    if not jobs.is_dir():
        return []
    return sorted((p.name for p in jobs.iterdir() if p.is_dir() and not p.is_symlink()), reverse=True)

"""Workflow jobs as every front end starts and shows them: what the command line asked for, and the words for a
job's state. Imported by the CLI before anything heavy: the standard library only at import time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from anvil.config import Settings
    from anvil.core.workflows.base import JobStatus
    from anvil.facade import SessionFacade
    from anvil.frontend.effects import Reply


@dataclass(frozen=True)
class JobLaunch:
    """``--workflow NAME``: start a job with ``instructions`` at once, go on with job ``resume``, or (neither) take
    the person's next message as a new job's instructions."""

    workflow: str
    instructions: str | None = None
    resume: str | None = None


def needs_instructions(workflow: str) -> bool:
    """Whether a job of ``workflow`` needs the person's instructions to start (a TDD job's plan is a file instead);
    True for a name no workflow has, so starting it says so."""
    from anvil.core.workflows.jobs import WORKFLOWS

    kind = WORKFLOWS.get(workflow)
    return kind is None or kind.needs_instructions


def starts_at_once(launch: JobLaunch) -> bool:
    """``--workflow NAME`` starts its job as soon as the session is ready (else the next message is its
    instructions)."""
    return bool(launch.instructions) or not needs_instructions(launch.workflow)


def waiting_text(workflow: str) -> str:
    """What the interactive front ends say while a ``--workflow`` run waits for the job's instructions."""
    return (f"A {workflow} job starts with your next message: say what the job is for (its instructions; @file "
            "attaches a file). /workflow shows the jobs.")


def status_text(status: JobStatus, root_shown: str) -> str:
    """``/workflow`` for a session working on a job: where it stands, its todos, its files."""
    todos = "\n".join(f"  {item.status:<11} {item.content}" for item in status.todos)
    title = f": {status.title}" if status.title else ""
    files = f" ({', '.join(status.files)})" if status.files else ""
    clear = " /workflow clear clears a halt once you put it right;" if status.kind == "HALTED" else ""
    return (f"Job {status.job_id} ({status.workflow}), {status.status}, phase {status.phase} · {status.kind}{title}\n"
            f"{todos}\nFiles: {root_shown}/{files}.{clear} /workflow stop ends the job.")


WORKFLOW_USAGE = ("/workflow phased INSTRUCTIONS starts a phased job (strategic and tactical phases in turn) in a new "
                  "session; @file attaches a file to the instructions. /workflow tdd [NOTES] starts a TDD job on the "
                  "PRs of the project's master plan. /workflow stop ends this session's job; /workflow clear clears "
                  "a TDD job's halt; `anvil -c` or `anvil --workflow NAME --resume JOB` goes on with a paused one.")


async def workflow_command(session: SessionFacade, arg: str) -> Reply:
    """``/workflow``: the job of this session (or the jobs there are); ``stop``; ``NAME INSTRUCTIONS``."""
    from anvil.core.workflows.base import JobError
    from anvil.frontend.effects import Render, Replace, RunEvents, Show
    from anvil.frontend.lines import shown_path
    from anvil.frontend.prompt import prepare_prompt

    name, _, instructions = arg.partition(" ")
    job = session.job
    if not name:
        if job is not None:
            return [Show(status_text(job, shown_path(job.job_dir, session.root)), "help")]
        jobs = session.jobs()[:10]
        listing = "Jobs in this project, newest first: " + ", ".join(jobs) + ".\n" if jobs else ""
        return [Show(listing + WORKFLOW_USAGE, "help")]
    if name == "stop":
        events = session.stop_job()
        return [Render(tuple(events))] if events else [Show("This session has no job to stop.")]
    if name == "clear":
        try:
            return [Show(session.clear_job_halt())]
        except JobError as exc:
            return [Show(str(exc), "error")]
    if not instructions.strip() and needs_instructions(name):
        return [Show(f"/workflow {name} needs the job's instructions. {WORKFLOW_USAGE}")]
    text = prepare_prompt(instructions.strip(), session.root).text if instructions.strip() else ""
    new = await session.open_new()
    try:
        events = new.start_job(name, text)
    except JobError as exc:
        await new.close()
        return [Show(str(exc), "error")]
    await session.close()
    return [Replace(new), Show(f"A {name} job starts in a new session ({new.id}); the previous one is kept: "
                               f"/resume {session.id}"), RunEvents(events)]


def clear_halt_command(root: Path, flags: dict[str, object], workflow: str, job_id: str | None,
                       trust: bool | None) -> int:
    """``anvil --workflow NAME --clear-halt [--resume JOB]``: clear the halt of a job of the project at ``root``
    from the shell, and say what changed (0), or what is still in the way (1)."""
    import sys

    from anvil.config import ConfigError, load_settings
    from anvil.core.workflows.base import JobError

    try:
        settings = load_settings(root, flags, trust=trust)
        print(clear_job_halt(settings, root, workflow, job_id))
    except (ConfigError, JobError) as exc:
        print(f"anvil: {exc}", file=sys.stderr)
        return 1
    return 0


def clear_job_halt(settings: Settings, root: Path, name: str, job_id: str | None) -> str:
    """The halt of job ``job_id`` (else the newest job of workflow ``name``) cleared: what changed. JobError saying
    what is still in the way, or that there is no such job."""
    from anvil.core.workflows.base import JobError
    from anvil.core.workflows.jobs import WORKFLOWS, job_directory, list_jobs
    from anvil.runtime import jobs_dir, workflow_settings

    kind = WORKFLOWS.get(name)
    if kind is None:
        raise JobError(f"There is no workflow called {name!r}; the workflows are: {', '.join(WORKFLOWS)}.")
    jobs = jobs_dir(settings, root)
    for candidate in [job_id] if job_id else list_jobs(jobs):
        try:
            job = kind.open(root.resolve(), job_directory(jobs, candidate), workflow_settings(settings, name))
        except JobError:
            if job_id:
                raise
            continue  # another workflow's job
        return job.clear_halt()
    raise JobError(f"There is no {name} job in {jobs}.")

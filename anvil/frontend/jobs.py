"""Workflow jobs as every front end starts and shows them: what the command line asked for, and the words for a
job's state. Imported by the CLI before anything heavy: the standard library only at import time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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


def waiting_text(workflow: str) -> str:
    """What the interactive front ends say while a ``--workflow`` run waits for the job's instructions."""
    return (f"A {workflow} job starts with your next message: say what the job is for (its instructions; @file "
            "attaches a file). /workflow shows the jobs.")


def status_text(status: JobStatus, root_shown: str) -> str:
    """``/workflow`` for a session working on a job: where it stands, its todos, its files."""
    todos = "\n".join(f"  {item.status:<11} {item.content}" for item in status.todos)
    title = f": {status.title}" if status.title else ""
    return (f"Job {status.job_id} ({status.workflow}), {status.status}, phase {status.phase} · {status.kind}{title}\n"
            f"{todos}\nFiles: {root_shown}/ (instructions.md, workspace.md, main_plan.md, todos.yaml, archive/, "
            "state.yaml). /workflow stop ends the job.")


WORKFLOW_USAGE = ("/workflow phased INSTRUCTIONS starts a phased job (strategic and tactical phases in turn) in a new "
                  "session; @file attaches a file to the instructions. /workflow stop ends this session's job; "
                  "`anvil -c` or `anvil --workflow phased --resume JOB` goes on with a paused one.")


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
    if not instructions.strip():
        return [Show(f"/workflow {name} needs the job's instructions. {WORKFLOW_USAGE}")]
    text = prepare_prompt(instructions.strip(), session.root).text
    new = await session.open_new()
    try:
        events = new.start_job(name, text)
    except JobError as exc:
        await new.close()
        return [Show(str(exc), "error")]
    await session.close()
    return [Replace(new), Show(f"A {name} job starts in a new session ({new.id}); the previous one is kept: "
                               f"/resume {session.id}"), RunEvents(events)]

"""A workflow job in the app: what ``--workflow`` asked for once the session is ready (start a job, go on with
one, or take the next message as a new job's instructions). Nothing of the engine is imported before it is used:
the app imports this before its first paint."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from anvil.core.events import Event
    from anvil.facade import SessionFacade
    from anvil.frontend.jobs import JobLaunch
    from anvil.tui.status import StatusBar


class JobHost(Protocol):
    session: SessionFacade | None
    job_launch: JobLaunch | None
    job_waiting: str | None

    @property
    def status(self) -> StatusBar: ...

    def add_line(self, kind: str, text: str) -> Any: ...

    def start_agent(self, stream: AsyncIterator[Event]) -> None: ...


def job_to_resume(launch: JobLaunch | None) -> tuple[str, str] | None:
    """(workflow, job id) for ``--workflow NAME --resume JOB``: the runtime opens that job's session."""
    return (launch.workflow, launch.resume) if launch is not None and launch.resume else None


def launch_job(host: JobHost) -> None:
    """The session is ready: its job's phase in the status bar; then, once, what ``--workflow`` asked for."""
    from anvil.frontend.jobs import starts_at_once, waiting_text
    from anvil.frontend.lines import phase_label

    session = host.session
    assert session is not None
    job = session.job
    host.status.update_state(job=phase_label(job.phase, job.kind) if job is not None else "")
    launch, host.job_launch = host.job_launch, None
    if launch is None:
        return
    if launch.resume:  # the runtime attached the job: a turn with no guidance goes on with it
        host.start_agent(session.submit(""))
    elif starts_at_once(launch):
        host.start_agent(job_stream(host, launch.workflow, launch.instructions or ""))
    else:
        host.job_waiting = launch.workflow
        host.add_line("notice", waiting_text(launch.workflow))


def waiting_job(host: JobHost, instructions: str) -> AsyncIterator[Event] | None:
    """The new job the message starts, when ``--workflow`` waits for one; None for an ordinary turn."""
    return job_stream(host, host.job_waiting, instructions) if host.job_waiting is not None else None


def job_stream(host: JobHost, workflow: str, instructions: str) -> AsyncIterator[Event]:
    """The new job's events; when it cannot start, one error event saying why."""
    from anvil.core.workflows.base import JobError

    assert host.session is not None
    try:
        stream = host.session.start_job(workflow, instructions)
    except JobError as exc:
        return _failed(str(exc))
    host.job_waiting = None
    return stream


async def _failed(message: str) -> AsyncIterator[Event]:
    from anvil.core.events import ErrorEvent

    yield ErrorEvent(message, kind="job")

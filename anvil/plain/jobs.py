"""A workflow job in `anvil --plain`: what ``--workflow`` asked for once the REPL is up (go on with a job, start
one with its instructions, or take the next message as a new job's instructions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

from anvil.core.workflows.base import JobError
from anvil.frontend.jobs import JobLaunch, starts_at_once, waiting_text

if TYPE_CHECKING:
    from anvil.core.events import Event
    from anvil.facade import SessionFacade


class JobHost(Protocol):
    session: SessionFacade
    #: --workflow's job, until it started (or while the REPL waits for its instructions)
    job: JobLaunch | None

    def say(self, text: str, style: str = "class:notice") -> None: ...

    async def run_events(self, events: AsyncIterator[Event]) -> None: ...


async def launch_job(host: JobHost) -> None:
    """Before the first prompt: go on with the resumed job, start one with its instructions, or say that the next
    message starts one."""
    launch = host.job
    if launch is None:
        return
    if launch.resume:  # the runtime attached the job: a turn with no guidance goes on with it
        host.job = None
        await host.run_events(host.session.submit(""))
    elif starts_at_once(launch):
        await start_job(host, launch.workflow, launch.instructions or "")
    else:
        host.say(f"ℹ {waiting_text(launch.workflow)}")


async def start_job(host: JobHost, workflow: str, instructions: str) -> None:
    """A new job in this session, run until it pauses or ends; what keeps it from starting is one error line."""
    try:
        events = host.session.start_job(workflow, instructions)
    except JobError as exc:
        host.say(f"✗ {exc}", "class:error")
        return
    host.job = None
    await host.run_events(events)

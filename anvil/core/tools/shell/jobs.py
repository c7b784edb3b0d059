"""Background commands: started with ``run_command(background=true)``, read with command_output, stopped with
kill_command, at their time limit (``background_timeout``) or when the session ends.

:class:`BackgroundJobs` is the part of the shell session that keeps them; it uses the session's launching,
logging and stopping (:class:`~anvil.core.tools.shell.processes.ShellSession` is one).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from anvil.core.process_groups import describe_exit, group_alive
from anvil.core.sandbox.lifetime import tagged_pids
from anvil.core.sandbox.sandbox import Launch, Sandbox
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.command_log import LogStore
from anvil.core.tools.shell.output_capture import OutputCollector
from anvil.core.tools.shell.spawn import DRAIN_GRACE, ProcessProtocol, launch_bash, spawn, stop


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s"


@dataclass
class BackgroundJob:
    id: str
    command: str
    cwd: Path
    pid: int
    transport: asyncio.SubprocessTransport
    protocol: ProcessProtocol
    collector: OutputCollector
    launch: Launch
    #: seconds it may run before it is stopped; 0 for no limit
    limit: float = 0.0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    killed: bool = False
    timed_out: bool = False
    watcher: asyncio.Task[None] | None = None
    limiter: asyncio.Task[None] | None = None

    @property
    def exit_code(self) -> int | None:
        return self.transport.get_returncode()

    @property
    def running(self) -> bool:
        return self.exit_code is None

    def status(self) -> str:
        elapsed = format_duration((self.ended or time.monotonic()) - self.started)
        if self.running:
            return f"running for {elapsed}"
        if self.timed_out:
            return f"stopped at its time limit ({format_duration(self.limit)}) after {elapsed}"
        if self.killed:
            return f"stopped by kill_command after {elapsed}"
        return f"{describe_exit(self.exit_code)} after {elapsed}"


class BackgroundJobs:
    """The background half of a shell session."""

    sandbox: Sandbox
    logs: LogStore
    cwd: Path
    kill_grace: float
    jobs: dict[str, BackgroundJob]
    tags: list[str]

    def _collector(self, label: str) -> OutputCollector:
        raise NotImplementedError

    async def start_background(self, command: str, *, sandboxed: bool = True,
                               limit: float = 0.0) -> BackgroundJob:
        job_id = f"bg{len(self.jobs) + 1}"
        launch = await launch_bash(self.sandbox, (command,), self.cwd, sandboxed)
        self.tags.append(launch.tag)
        collector = self._collector(job_id)
        transport, protocol = await spawn(launch, self.cwd, collector)
        job = BackgroundJob(job_id, command, self.cwd, transport.get_pid(), transport, protocol, collector, launch,
                            limit=limit)
        job.watcher = asyncio.create_task(self._watch(job))
        if limit > 0:
            job.limiter = asyncio.create_task(self._limit(job))
        self.jobs[job_id] = job
        return job

    async def _watch(self, job: BackgroundJob) -> None:
        await job.protocol.exited.wait()
        job.ended = time.monotonic()
        await job.protocol.output_closed.wait()
        self._wrap_up(job)

    def _wrap_up(self, job: BackgroundJob) -> None:
        job.collector.finish()
        job.transport.close()
        if job.collector.log is not None:
            self.logs.finished(job.collector.log)

    async def _limit(self, job: BackgroundJob) -> None:
        await asyncio.sleep(job.limit)
        if job.running:
            job.timed_out = True
            await self.kill(job)

    def job(self, job_id: str) -> BackgroundJob:
        job = self.jobs.get(job_id.strip())
        if job is None:
            known = ", ".join(f"{j.id} ({j.status()}: {j.command[:40]})" for j in self.jobs.values())
            hint = (f"Known ids: {known}. Use one of these." if known else "No background commands were "
                    "started in this session; start one with run_command(command=..., background=true).")
            raise ToolError(f"There is no background command with id '{job_id}'. {hint}")
        return job

    async def kill(self, job: BackgroundJob) -> bool:
        """Stop the job and everything it started; True when something was still running."""
        job.killed = job.killed or job.running
        # also when the shell already exited: what it started with `&` or `setsid` may still run
        alive = job.running or group_alive(job.pid) or bool(tagged_pids(job.launch.tag))
        if alive:
            await stop(job.pid, job.launch.tag, self.kill_grace)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.protocol.exited.wait(), 2.0)
        if job.limiter is not None and job.limiter is not asyncio.current_task():
            job.limiter.cancel()
        if job.watcher is not None and not job.watcher.done():
            # the shell is gone but an escaped descendant may hold the pipe: stop listening
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.watcher), DRAIN_GRACE)
            if not job.watcher.done():
                job.watcher.cancel()
                job.ended = job.ended or time.monotonic()
                self._wrap_up(job)
        return alive

"""Running shell commands for the tools: one shell session per tool context.

A :class:`ShellSession` lives in ``ctx.state["shell"]``. It keeps the working directory the model
``cd``-ed into (as long as it stays inside the project or an allowed directory) and the table of
background jobs. Every command runs as ``bash -c`` in its own process group with stdin closed and
pager/editor/prompt variables set so nothing can wait for a person who is not there; a timeout or
an interrupt ends the whole group, not just the shell. Output is cleaned (ANSI escapes, progress
bar rewrites) and kept in bounded memory as head + tail, while the full text streams to a log file
under ``<data_dir>/logs/<session_id>/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from anvil.core.process_groups import (
    KILL_GRACE,
    NONINTERACTIVE_ENV,
    describe_exit,
    group_alive,
    signal_group,
    terminate_group,
)
from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.errors import ToolError
from anvil.core.tools.paths import resolve_path
from anvil.core.tools.shell.output_capture import OutputCollector

#: After the shell exits, how long its output pipe may stay open (held by something it started with ``&``).
DRAIN_GRACE = 0.5

# `CI=true` is deliberately not set: it changes test behaviour (jest stops writing snapshots, for one).
_DROPPED_ENV = ("FORCE_COLOR", "CLICOLOR_FORCE", "PROMPT_COMMAND")


def format_duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def effective_timeout(requested: float | None, settings: ToolSettings) -> tuple[float, str | None]:
    """The timeout to use and, when the request was capped, a note saying so."""
    if requested is None:
        return min(settings.default_timeout, settings.max_timeout), None
    if requested > settings.max_timeout:
        return settings.max_timeout, (f"The requested timeout of {requested:g}s was capped at the maximum of "
                                      f"{settings.max_timeout:g}s; use background=true for longer commands.")
    return requested, None


class _ProcessProtocol(asyncio.SubprocessProtocol):
    """Feeds output to a collector. Exit and end-of-output are tracked apart, because
    ``Process.wait()`` also waits for the pipe, which a process started with ``&`` may hold forever."""

    def __init__(self, collector: OutputCollector) -> None:
        self.collector = collector
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self.collector.feed(bytes(data))

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


async def _spawn(argv: tuple[str, ...], cwd: Path,
                 collector: OutputCollector) -> tuple[asyncio.SubprocessTransport, _ProcessProtocol]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(NONINTERACTIVE_ENV)
    loop = asyncio.get_running_loop()
    return await loop.subprocess_exec(
        lambda: _ProcessProtocol(collector), shutil.which("bash") or "/bin/sh", "-c", *argv,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        cwd=cwd, env=env, start_new_session=True,  # own process group: a kill reaches every descendant
    )


async def _spawn_or_explain(argv: tuple[str, ...], cwd: Path,
                            collector: OutputCollector) -> tuple[asyncio.SubprocessTransport, _ProcessProtocol]:
    try:
        return await _spawn(argv, cwd, collector)
    except OSError as exc:
        collector.finish()
        raise ToolError(f"The command could not be started in {cwd}: {exc.strerror or exc}. Check that the "
                        "directory exists and that bash (or /bin/sh) is installed.") from exc


@dataclass
class CommandRun:
    """The outcome of a foreground command."""

    command: str
    cwd: Path
    output: str  # cleaned, head + tail within the output budget
    exit_code: int | None
    duration: float
    timed_out: bool = False
    timeout: float = 0.0
    truncated: bool = False
    total_chars: int = 0
    log_path: Path | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class BackgroundJob:
    id: str
    command: str
    cwd: Path
    pid: int
    transport: asyncio.SubprocessTransport
    protocol: _ProcessProtocol
    collector: OutputCollector
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    killed: bool = False
    watcher: asyncio.Task[None] | None = None

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
        if self.killed:
            return f"stopped by kill_command after {elapsed}"
        return f"{describe_exit(self.exit_code)} after {elapsed}"


class ShellSession:
    """The shell state of one tool context: working directory, background jobs, log files."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.cwd = ctx.root
        self.jobs: dict[str, BackgroundJob] = {}
        self.kill_grace = KILL_GRACE
        self._log_seq = 0

    @property
    def log_dir(self) -> Path:
        return self.ctx.data_dir / "logs" / self.ctx.session_id

    def new_log_path(self, label: str) -> Path:
        self._log_seq += 1
        slug = re.sub(r"[^A-Za-z0-9]+", "-", label[:40]).strip("-") or "command"
        return self.log_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{self._log_seq:03d}-{slug}.log"

    def _inside(self, path: Path) -> bool:
        try:
            resolve_path(str(path), self.ctx.root, self.ctx.settings.allowed_dirs)
        except ToolError:
            return False
        return True

    async def run(self, command: str, timeout: float, *, cwd: Path | None = None) -> CommandRun:
        """Run ``command`` to completion. Without ``cwd`` it runs in the session's working directory
        and a ``cd`` in it carries over to the next command."""
        notes: list[str] = []
        track = cwd is None
        if track and not self.cwd.is_dir():
            notes.append(f"The working directory {self.ctx.display(self.cwd)} no longer exists; "
                         "the command ran in the project root instead.")
            self.cwd = self.ctx.root
        run_dir = self.cwd if cwd is None else cwd
        pwd_fd, pwd_name = tempfile.mkstemp(prefix="anvil-pwd-")
        os.close(pwd_fd)
        pwd_file = Path(pwd_name)
        # An EXIT trap records where the shell ended up even when the command calls `exit`; bash keeps
        # the command's exit status across the trap. The command comes in as an argument to `eval`, so
        # bash's errors quote the command alone; all on line 1 so they carry the command's line numbers.
        script = (f"__anvil_pwd() {{ pwd -P > {shlex.quote(pwd_name)} 2>/dev/null; }}; trap __anvil_pwd EXIT; "
                  "__anvil_command=$1; shift; eval \"$__anvil_command\"")
        collector = OutputCollector(self.ctx.settings.output_budget, self.new_log_path(command), self.ctx.secrets.mask)
        started = time.monotonic()
        try:
            exit_code, timed_out, stragglers = await self._execute((script, "bash", command), run_dir,
                                                                   timeout, collector)
            final_dir = _read_quietly(pwd_file)
        finally:
            pwd_file.unlink(missing_ok=True)
        if stragglers:
            notes.append("Processes the command left running in the background still held its output, so "
                         "they were stopped. Use run_command with background=true for servers and watchers.")
        if track and final_dir:
            notes.extend(self._follow_cd(Path(final_dir)))
        if collector.log_error:
            notes.append(f"The full output could not be saved ({collector.log_error}).")
        whole = collector.whole
        return CommandRun(command=command, cwd=run_dir, output=whole.render(collector.log_path),
                          exit_code=exit_code, duration=time.monotonic() - started, timed_out=timed_out,
                          timeout=timeout, truncated=whole.truncated, total_chars=whole.total,
                          log_path=collector.log_path, notes=notes)

    def _follow_cd(self, final: Path) -> list[str]:
        if final == self.cwd:
            return []
        if self._inside(final):
            self.cwd = final
            where = "the project root" if final == self.ctx.root else self.ctx.display(final)
            return [f"Working directory is now {where}."]
        self.cwd = self.ctx.root
        return [f"The command changed directory to {final}, which is outside the project; the working "
                f"directory was reset to the project root ({self.ctx.root}). The person can allow other "
                "directories with `allowed_dirs` in .anvil/config.toml."]

    async def _execute(self, argv: tuple[str, ...], cwd: Path, timeout: float,
                       collector: OutputCollector) -> tuple[int | None, bool, bool]:
        """Runs ``bash -c *argv``; returns (exit code, timed out?, stray processes stopped?)."""
        transport, protocol = await _spawn_or_explain(argv, cwd, collector)
        pgid = transport.get_pid()
        timed_out = stragglers = False
        try:
            try:
                await asyncio.wait_for(protocol.exited.wait(), timeout)
            except TimeoutError:
                timed_out = True
                await terminate_group(pgid, self.kill_grace)
                await protocol.exited.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(protocol.output_closed.wait(), DRAIN_GRACE)
            if not protocol.output_closed.is_set():
                # something the command started with `&` still writes to our pipe: it would outlive
                # the call unseen and untracked
                stragglers = True
                await terminate_group(pgid, self.kill_grace)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(protocol.output_closed.wait(), DRAIN_GRACE)
        except asyncio.CancelledError:
            signal_group(pgid, signal.SIGKILL)  # interrupted by the person: stop everything at once
            raise
        finally:
            transport.close()
            collector.finish()
        return transport.get_returncode(), timed_out, stragglers

    async def start_background(self, command: str) -> BackgroundJob:
        job_id = f"bg{len(self.jobs) + 1}"
        if not self.cwd.is_dir():
            self.cwd = self.ctx.root
        collector = OutputCollector(self.ctx.settings.output_budget, self.new_log_path(job_id), self.ctx.secrets.mask)
        transport, protocol = await _spawn_or_explain((command,), self.cwd, collector)
        job = BackgroundJob(job_id, command, self.cwd, transport.get_pid(), transport, protocol, collector)
        job.watcher = asyncio.create_task(self._watch(job))
        self.jobs[job_id] = job
        return job

    async def _watch(self, job: BackgroundJob) -> None:
        await job.protocol.exited.wait()
        job.ended = time.monotonic()
        await job.protocol.output_closed.wait()
        job.collector.finish()
        job.transport.close()

    def job(self, job_id: str) -> BackgroundJob:
        job = self.jobs.get(job_id.strip())
        if job is None:
            known = ", ".join(f"{j.id} ({j.status()}: {j.command[:40]})" for j in self.jobs.values())
            hint = (f"Known ids: {known}. Use one of these." if known else "No background commands were "
                    "started in this session; start one with run_command(command=..., background=true).")
            raise ToolError(f"There is no background command with id '{job_id}'. {hint}")
        return job

    async def kill(self, job: BackgroundJob) -> bool:
        """Stop the job's process group; True when something was still running."""
        job.killed = job.killed or job.running
        # also when the shell already exited: what it started with `&` is still in its group
        alive = job.running or group_alive(job.pid)
        if alive:
            await terminate_group(job.pid, self.kill_grace)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(job.protocol.exited.wait(), 2.0)
        if job.watcher is not None and not job.watcher.done():
            # the shell is gone but an escaped descendant may hold the pipe: stop listening
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(job.watcher), DRAIN_GRACE)
            if not job.watcher.done():
                job.watcher.cancel()
                job.ended = job.ended or time.monotonic()
                job.collector.finish()
                job.transport.close()
        return alive

    async def close(self) -> None:
        """Stop every background job; registered in ``ctx.cleanups``."""
        await asyncio.gather(*(self.kill(job) for job in self.jobs.values()), return_exceptions=True)


def _read_quietly(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:  # the command may have removed it; then the working directory just stays
        return ""


def shell_session(ctx: ToolContext) -> ShellSession:
    """The context's shell session, created (and its cleanup registered) on first use."""
    session = ctx.state.get("shell")
    if not isinstance(session, ShellSession):
        session = ShellSession(ctx)
        ctx.state["shell"] = session
        ctx.cleanups.append(session.close)
    return session

"""Running shell commands for the tools: one shell session per tool context.

A :class:`ShellSession` lives in ``ctx.state["shell"]``. It keeps the working directory the model
``cd``-ed into (as long as it stays inside the project or an allowed directory) and the table of
background jobs (:mod:`jobs`). Every command runs through the session's sandbox (:mod:`spawn`); a timeout or
an interrupt ends everything it started, not just the shell. Output is cleaned (ANSI escapes, progress bar
rewrites) and kept in bounded memory as head + tail, while the text goes to a capped log file under
``<data_dir>/logs/<session_id>/`` (:mod:`command_log`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from anvil.core.process_groups import KILL_GRACE
from anvil.core.sandbox.blocked import Block
from anvil.core.sandbox.lifetime import end_tagged, tagged_pids
from anvil.core.sandbox.sandbox import Launch
from anvil.core.tools.base import EditorTerminal, ToolContext, ToolSettings
from anvil.core.tools.errors import ToolError
from anvil.core.tools.paths import resolve_path
from anvil.core.tools.shell.command_log import LogStore
from anvil.core.tools.shell.jobs import BackgroundJob, BackgroundJobs
from anvil.core.tools.shell.output_capture import OutputCollector
from anvil.core.tools.shell.spawn import DRAIN_GRACE, kill_now, launch_bash, spawn, stop

#: A cap of 0 in the settings means no cap; this stands in for it.
_UNLIMITED = 1 << 62


def effective_timeout(requested: float | None, settings: ToolSettings) -> tuple[float, str | None]:
    """The timeout to use and, when the request was capped, a note saying so."""
    if requested is None:
        return min(settings.default_timeout, settings.max_timeout), None
    if requested > settings.max_timeout:
        return settings.max_timeout, (f"The requested timeout of {requested:g}s was capped at the maximum of "
                                      f"{settings.max_timeout:g}s; use background=true for longer commands.")
    return requested, None


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
    #: whether it ran in the sandbox, and what the sandbox refused it (read from its output)
    sandboxed: bool = False
    block: Block | None = None
    #: bytes the capped log left out of its middle
    log_cut: int = 0


class ShellSession(BackgroundJobs):
    """The shell state of one tool context: working directory, background jobs, log files."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.sandbox = ctx.sandbox
        self.cwd = ctx.root
        self.jobs: dict[str, BackgroundJob] = {}
        self.kill_grace = KILL_GRACE
        self.logs = LogStore(ctx.data_dir / "logs", ctx.session_id, ctx.settings.logs_total_cap or _UNLIMITED)
        #: the tag of every command this session started: what is still running at its end is ended
        self.tags: list[str] = []
        ctx.resets.append(self._back_to_root)  # a new conversation knows nothing of an earlier `cd`

    def _back_to_root(self) -> None:
        self.cwd = self.ctx.root

    def _collector(self, label: str) -> OutputCollector:
        log = self.logs.new_log(label, self.ctx.settings.log_cap or _UNLIMITED)
        return OutputCollector(self.ctx.settings.output_budget, log, self.ctx.secrets.mask)

    def _inside(self, path: Path) -> bool:
        try:
            resolve_path(str(path), self.ctx.root, self.ctx.settings.allowed_dirs)
        except ToolError:
            return False
        return True

    async def run(self, command: str, timeout: float, *, cwd: Path | None = None,
                  sandboxed: bool = True) -> CommandRun:
        """Run ``command`` to completion. Without ``cwd`` it runs in the session's working directory
        and a ``cd`` in it carries over to the next command. ``sandboxed=False`` runs it outside the
        sandbox (only after the person agreed)."""
        notes: list[str] = []
        track = cwd is None
        if track and not self.cwd.is_dir():
            notes.append(f"The working directory {self.ctx.display(self.cwd)} no longer exists; "
                         "the command ran in the project root instead.")
            self.cwd = self.ctx.root
        run_dir = self.cwd if cwd is None else cwd
        pwd_file, pwd_name = self.sandbox.temp_file("anvil-pwd-", sandboxed)
        # An EXIT trap records where the shell ended up even when the command calls `exit`; bash keeps
        # the command's exit status across the trap. The command comes in as an argument to `eval`, so
        # bash's errors quote the command alone; all on line 1 so they carry the command's line numbers.
        script = (f"__anvil_pwd() {{ pwd -P > {shlex.quote(pwd_name)} 2>/dev/null; }}; trap __anvil_pwd EXIT; "
                  "__anvil_command=$1; shift; eval \"$__anvil_command\"")
        try:
            launch = await launch_bash(self.sandbox, (script, "bash", command), run_dir, sandboxed)
        except ToolError:
            pwd_file.unlink(missing_ok=True)
            raise
        self.tags.append(launch.tag)
        collector = self._collector(command)
        started = time.monotonic()
        try:
            exit_code, timed_out, stragglers = await self._execute(launch, run_dir, timeout, collector)
            final_dir = _read_quietly(pwd_file)
        finally:
            pwd_file.unlink(missing_ok=True)
            if collector.log is not None:
                self.logs.finished(collector.log)
        if stragglers:
            notes.append("Processes the command left running in the background still held its output, so "
                         "they were stopped. Use run_command with background=true for servers and watchers.")
        if track and final_dir:
            notes.extend(self._follow_cd(Path(final_dir)))
        if collector.log_error:
            notes.append(f"The output could not all be saved to its log yet ({collector.log_error}); anvil holds "
                         "the rest in memory (within the log's cap) and appends it to the log once there is room.")
        whole = collector.whole
        output = whole.render(collector.log_path)
        failed = timed_out or exit_code != 0
        block = self.sandbox.find_block(launch, output, run_dir) if failed else None
        return CommandRun(command=command, cwd=run_dir, output=output, exit_code=exit_code,
                          duration=time.monotonic() - started, timed_out=timed_out, timeout=timeout,
                          truncated=whole.truncated, total_chars=whole.total, log_path=collector.log_path,
                          notes=notes, sandboxed=launch.sandboxed, block=block,
                          log_cut=collector.log.cut if collector.log is not None else 0)

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

    async def _execute(self, launch: Launch, cwd: Path, timeout: float,
                       collector: OutputCollector) -> tuple[int | None, bool, bool]:
        """Runs the launch; returns (exit code, timed out?, stray processes stopped?)."""
        if self.ctx.terminal is not None:
            return await _in_terminal(self.ctx.terminal, launch, cwd, timeout, collector)
        transport, protocol = await spawn(launch, cwd, collector)
        pgid = transport.get_pid()
        timed_out = stragglers = False
        try:
            try:
                await asyncio.wait_for(protocol.exited.wait(), timeout)
            except TimeoutError:
                timed_out = True
                await stop(pgid, launch.tag, self.kill_grace)
                await protocol.exited.wait()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(protocol.output_closed.wait(), DRAIN_GRACE)
            if not protocol.output_closed.is_set():
                # something the command started with `&` still writes to our pipe: it would outlive
                # the call unseen and untracked
                stragglers = True
                await stop(pgid, launch.tag, self.kill_grace)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(protocol.output_closed.wait(), DRAIN_GRACE)
        except asyncio.CancelledError:
            kill_now(pgid, launch.tag)  # interrupted by the person: stop everything at once
            raise
        finally:
            transport.close()
            collector.finish()
        return transport.get_returncode(), timed_out, stragglers

    def kill_all_now(self) -> None:
        """SIGKILL everything the session's commands started, without waiting (the process is ending at once)."""
        for job in self.jobs.values():
            kill_now(job.pid, job.launch.tag)
        for pid in tagged_pids(self.tags):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    async def close(self) -> None:
        """Stop every background job and whatever a command left running; registered in ``ctx.cleanups``."""
        await asyncio.gather(*(self.kill(job) for job in self.jobs.values()), return_exceptions=True)
        await end_tagged(self.tags, grace=self.kill_grace)
        self.logs.close()  # what a full disk kept out of the logs: a last try, or said lost


async def _in_terminal(terminal: EditorTerminal, launch: Launch, cwd: Path, timeout: float,
                       collector: OutputCollector) -> tuple[int | None, bool, bool]:
    """The launch run in the editor's terminal: the same command line (the sandbox's, and its process tag), shown
    to the person as it runs; its output reaches the model the same way."""
    try:
        run = await terminal.run(list(launch.argv), dict(launch.env), cwd, timeout)
        collector.feed(run.output.encode("utf-8"))
    finally:
        collector.finish()
    return run.exit_code, run.timed_out, False


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
        ctx.troubles.append(session.logs.trouble)
    return session

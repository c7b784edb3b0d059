"""Shell tools: run_command, command_output and kill_command.

The machinery (process groups, timeouts, working directory, logs) is in ``processes``; this module
is what the model sees: arguments, descriptions and how results read.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from typing import Any

from pydantic import Field, model_validator

from anvil.core.process_groups import describe_exit
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.jobs import BackgroundJob, format_duration
from anvil.core.tools.shell.processes import CommandRun, effective_timeout, shell_session
from anvil.core.tools.shell.spawn import DRAIN_GRACE

#: How much of a stopped background command's output kill_command shows.
KILL_TAIL_CHARS = 4000


def short_command(command: str, width: int = 40) -> str:
    """One line of a command for labels: first line, spaces collapsed, cut with an ellipsis."""
    lines = command.strip().splitlines()
    line = " ".join(lines[0].split()) if lines else ""
    if len(lines) > 1 or len(line) > width:
        line = line[: width - 1].rstrip() + "…"
    return line


class RunCommandArgs(ToolArgs):
    command: str = Field(description="The bash command line to run.")
    timeout: float | None = Field(
        default=None, gt=0,
        description="Seconds before the command and everything it started are stopped (default 120, max 600; "
                    "with background=true, at most the background time limit).")
    background: bool = Field(
        default=False,
        description="Start the command and return at once with an id, for servers, watchers and long builds. "
                    "Read its output with command_output and stop it with kill_command.")
    sandbox: bool = Field(
        default=True,
        description="false runs the command outside the OS sandbox. Only after the sandbox blocked it and it is "
                    "really needed: the person is always asked, and must see `reason`.")
    reason: str | None = Field(default=None, description="With sandbox=false: why the command must run "
                                                         "outside the sandbox, for the person deciding.")

    @model_validator(mode="after")
    def _reason_given(self) -> RunCommandArgs:
        if not self.sandbox and not (self.reason or "").strip():
            raise ValueError("sandbox=false needs a reason: say why the command must run outside the sandbox "
                             "(the person reads it when deciding)")
        return self


class RunCommand(Tool):
    name = "run_command"
    description = (
        "Run a bash command in the project and return its exit code and output (stdout and stderr "
        "interleaved). The working directory persists between calls: a `cd` carries over as long as it stays "
        "inside the project. There is no terminal and stdin is closed, so nothing can answer a prompt: pass "
        "non-interactive flags (-y, --yes, -m \"message\"); pagers are disabled. Long output is cut in the "
        "middle and the full log is saved to a file whose path is given. Prefer read_file, grep, glob and "
        "edit_file for reading, searching and changing files. Use background=true for servers and watchers."
    )
    Args = RunCommandArgs
    kind = "execute"
    mutates = True
    approval = "command"

    def command(self, args: Any) -> str:
        return str(args.command)

    def outside_sandbox(self, args: Any) -> str | None:
        return None if args.sandbox else str(args.reason or "")

    def phase(self, args: Any) -> str:
        return f"Running {short_command(args.command)}" + ("" if args.sandbox else " outside the sandbox")

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        command = args.command.strip()
        if not command:
            raise ToolError("The command is empty. Pass the bash command line to run in `command`.")
        session = shell_session(ctx)
        if args.background:
            limit = background_limit(args.timeout, ctx.settings.background_timeout)
            return _started(await session.start_background(command, sandboxed=args.sandbox, limit=limit), ctx)
        timeout, cap_note = effective_timeout(args.timeout, ctx.settings)
        run = await session.run(command, timeout, sandboxed=args.sandbox)
        return render_run(run, ctx, [cap_note] if cap_note else [])


def background_limit(requested: float | None, configured: float) -> float:
    """How long a background command may run: what the model asked, within the configured limit (0: none)."""
    if requested is None:
        return configured
    return min(requested, configured) if configured else requested


def render_run(run: CommandRun, ctx: ToolContext, notes: list[str]) -> ToolResult:
    """A finished foreground command as the model reads it, with a one-line summary for front ends."""
    status = f"timed out after {run.timeout:g}s" if run.timed_out else describe_exit(run.exit_code)
    parts = [run.block.text(), ""] if run.block else []
    parts += [run.output.rstrip("\n") if run.output.strip() else "(no output)",
              f"[{status} · {format_duration(run.duration)}]"]
    if run.timed_out:
        parts.append(
            f"The command did not finish within {run.timeout:g}s, so it and every process it started were "
            "stopped (SIGTERM, then SIGKILL). The output above is what it printed until then. Pass a larger "
            f"timeout (max {ctx.settings.max_timeout:g}s) or use background=true for servers and watchers.")
    if run.truncated and run.log_path is not None:
        log = shlex.quote(str(run.log_path))
        kept = (f"The log keeps its start and end ({run.log_cut:,} bytes of the middle were left out of it too)"
                if run.log_cut else "The full output is")
        parts.append(
            f"The output was {run.total_chars:,} characters, so the middle was cut. {kept} in "
            f"{run.log_path}; search it with run_command, e.g. grep -n 'error' {log} or sed -n '200,300p' {log}.")
    parts.extend(notes + run.notes)
    if not run.sandboxed and ctx.sandbox.active:
        parts.append("This command ran outside the sandbox, as the person allowed.")
    summary = status if run.timed_out else f"{status} · {format_duration(run.duration)}"
    if run.block:
        summary = run.block.summary.removesuffix(".")
    return ToolResult(
        output="\n".join(parts),
        ok=run.exit_code == 0 and not run.timed_out,
        summary=summary,
        data={"exit_code": run.exit_code, "duration": round(run.duration, 3), "timed_out": run.timed_out,
              "truncated": run.truncated, "log_path": str(run.log_path) if run.log_path else None,
              "cwd": ctx.display(run.cwd), "sandboxed": run.sandboxed,
              "blocked_by_sandbox": run.block.summary if run.block else None},
    )


def _started(job: BackgroundJob, ctx: ToolContext) -> ToolResult:
    log = f" Its output is logged to {job.collector.log_path}." if job.collector.log_path else ""
    limit = (f" It is stopped after {format_duration(job.limit)} (the time limit for background commands)."
             if job.limit else "")
    return ToolResult(
        output=(f"Started {job.id} in {ctx.display(job.cwd)}: {job.command}\n"
                f"It keeps running while you work. Read its new output with command_output(id=\"{job.id}\") "
                f"and stop it with kill_command(id=\"{job.id}\").{limit}{log}"),
        summary=f"started {job.id}",
        data={"id": job.id, "pid": job.pid,
              "log_path": str(job.collector.log_path) if job.collector.log_path else None},
    )


class JobIdArgs(ToolArgs):
    id: str = Field(description='The id run_command returned for a background command, like "bg1".')


async def _settle(job: BackgroundJob) -> None:
    """When the job has just exited, let its last output arrive before it is read."""
    if not job.running and job.watcher is not None and not job.watcher.done():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(job.watcher), DRAIN_GRACE)


class CommandOutput(Tool):
    name = "command_output"
    description = (
        "Show the new output of a background command (started with run_command background=true) since the "
        "last check, whether it is still running, and its exit code once it has finished."
    )
    Args = JobIdArgs
    kind = "execute"
    polls = True

    def phase(self, args: Any) -> str:
        return f"Checking {args.id}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        job = shell_session(ctx).job(args.id)
        await _settle(job)
        unread = job.collector.take_unread()
        parts = [f"{job.id}: {job.status()} ({short_command(job.command, 60)})",
                 unread.render(job.collector.log_path).rstrip("\n") if unread.total else "(no new output)"]
        if unread.truncated and job.collector.log_path is not None:
            parts.append(f"The middle of the new output was cut; everything is in {job.collector.log_path}.")
        new_lines = unread.lines
        state = "running" if job.running else describe_exit(job.exit_code)
        return ToolResult(
            output="\n".join(parts),
            summary=f"{job.id} {state} · {new_lines} new line{'s' if new_lines != 1 else ''}",
            data={"id": job.id, "running": job.running, "exit_code": job.exit_code},
        )


class KillCommand(Tool):
    name = "kill_command"
    description = (
        "Stop a background command and everything it started (SIGTERM, then SIGKILL after a short grace), "
        "and show the end of its output."
    )
    Args = JobIdArgs
    kind = "execute"
    mutates = True
    approval = "rule"

    def phase(self, args: Any) -> str:
        return f"Stopping {args.id}"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        session = shell_session(ctx)
        job = session.job(args.id)
        was_running = job.running
        stopped_leftovers = await session.kill(job) and not was_running
        await _settle(job)
        job.collector.take_unread()  # what is shown now counts as read
        tail = job.collector.whole.last(min(ctx.settings.output_budget, KILL_TAIL_CHARS)).rstrip("\n")
        if was_running:
            elapsed = format_duration((job.ended or job.started) - job.started)
            head = (f"Stopped {job.id} ({short_command(job.command, 60)}) after {elapsed}: "
                    f"{describe_exit(job.exit_code)}.")
        else:
            leftovers = " Processes it had left running were stopped." if stopped_leftovers else ""
            head = f"{job.id} had already finished ({job.status()}).{leftovers}"
        log = f"\nFull output: {job.collector.log_path}" if job.collector.log_path else ""
        return ToolResult(
            output=f"{head}\nLast output:\n{tail or '(no output)'}{log}",
            summary=f"stopped {job.id}" if was_running else f"{job.id} had already finished",
            data={"id": job.id, "exit_code": job.exit_code},
        )


SHELL_TOOLS: list[Tool] = [RunCommand(), CommandOutput(), KillCommand()]

"""Starting and stopping a command's processes: the environment, the subprocess, the way it is ended.

Every command runs as ``bash -c`` (in the sandbox when there is one) in its own process group, with stdin
closed and pager/editor/prompt variables set so nothing waits for a person who is not there. Stopping a
command ends its process group and every process carrying its tag (:mod:`anvil.core.sandbox.lifetime`), so
``setsid`` daemons go too; in the sandbox the pid namespace already sees to that.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

from anvil.core.process_groups import NONINTERACTIVE_ENV, signal_group, terminate_group
from anvil.core.sandbox.lifetime import end_tagged, tagged_pids
from anvil.core.sandbox.sandbox import Launch, Sandbox, SandboxUnavailable
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.output_capture import OutputCollector

#: After the shell exits, how long its output pipe may stay open (held by something it started with ``&``).
DRAIN_GRACE = 0.5

# `CI=true` is deliberately not set: it changes test behaviour (jest stops writing snapshots, for one).
_DROPPED_ENV = ("FORCE_COLOR", "CLICOLOR_FORCE", "PROMPT_COMMAND")


def command_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    env.update(NONINTERACTIVE_ENV)
    return env


class ProcessProtocol(asyncio.SubprocessProtocol):
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


async def launch_bash(sandbox: Sandbox, argv: tuple[str, ...], cwd: Path, sandboxed: bool) -> Launch:
    """``bash -c *argv`` on its way into the sandbox; a required sandbox that is missing is a tool error."""
    bash = shutil.which("bash") or "/bin/sh"
    try:
        return await sandbox.launch([bash, "-c", *argv], cwd, sandboxed=sandboxed, env=command_env())
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from exc


async def spawn(launch: Launch, cwd: Path,
                collector: OutputCollector) -> tuple[asyncio.SubprocessTransport, ProcessProtocol]:
    loop = asyncio.get_running_loop()
    try:
        return await loop.subprocess_exec(
            lambda: ProcessProtocol(collector), *launch.argv,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            cwd=cwd, env=launch.env, start_new_session=True,  # own process group: a kill reaches every descendant
        )
    except OSError as exc:
        collector.finish()
        raise ToolError(f"The command could not be started in {cwd}: {exc.strerror or exc}. Check that the "
                        "directory exists and that bash (or /bin/sh) is installed.") from exc


async def stop(pgid: int, tag: str, grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace``: the process group and every process that carries the tag."""
    await asyncio.gather(terminate_group(pgid, grace), end_tagged(tag, grace=grace))


def kill_now(pgid: int, tag: str) -> None:
    """SIGKILL at once (the person interrupted): no waiting, so it also works while a task is cancelled."""
    signal_group(pgid, signal.SIGKILL)
    for pid in tagged_pids(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue

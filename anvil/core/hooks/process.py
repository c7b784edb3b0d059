"""Running one hook command: bash in the project root, in its own process group, with bounded output and a
timeout. What the result means (block, context, notices) is :mod:`anvil.core.hooks.runner`' business, not this one's.

Never raises (except cancellation): a hook that cannot start, hangs or floods its pipes must not take the agent
down with it, so every way it can end is described by a :class:`HookRun`.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from anvil.core.process_groups import signal_group, terminate_group

#: bytes of stdout/stderr kept per hook; the rest is read and dropped so the hook never blocks on a full pipe
OUTPUT_LIMIT = 64_000
#: seconds a hook that is being stopped gets between SIGTERM and SIGKILL
KILL_GRACE = 1.0
#: after a hook exits, how long its pipes may stay open (held by something it started in the background)
DRAIN_GRACE = 0.5


@dataclass
class HookRun:
    """How one hook process ended."""

    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None  # it could not be started


class _HookProtocol(asyncio.SubprocessProtocol):
    """Bounded stdout/stderr buffers; exit and end-of-output tracked apart (see processes.py for why)."""

    def __init__(self) -> None:
        self.buffers: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
        self.exited = asyncio.Event()
        self.output_closed = asyncio.Event()
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        buffer = self.buffers.get(fd)
        if buffer is not None and len(buffer) < OUTPUT_LIMIT:
            buffer += data[: OUTPUT_LIMIT - len(buffer)]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open:
            self.output_closed.set()

    def process_exited(self) -> None:
        self.exited.set()


async def run_hook_process(command: str, stdin: bytes, cwd: Path, env: dict[str, str], timeout: float) -> HookRun:
    """Run one hook command; never raises (except cancellation, which kills the hook's process group)."""
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.subprocess_exec(
            _HookProtocol, shutil.which("bash") or "/bin/sh", "-c", command, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
            start_new_session=True)  # own process group: a timeout reaches everything the hook started
    except OSError as exc:
        return HookRun(None, error=f"{exc.strerror or exc} (in {cwd})")
    pgid = transport.get_pid()
    timed_out = False
    try:
        pipe = transport.get_pipe_transport(0)
        if pipe is not None:
            pipe.write(stdin)
            pipe.close()  # flushes, then closes: the hook sees end of input
        try:
            await asyncio.wait_for(protocol.exited.wait(), timeout)
        except TimeoutError:
            timed_out = True
            await terminate_group(pgid, KILL_GRACE)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(protocol.exited.wait(), KILL_GRACE)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(protocol.output_closed.wait(), DRAIN_GRACE)
        if not protocol.output_closed.is_set():
            # something the hook left running still holds its output: it would outlive the hook unseen
            await terminate_group(pgid, KILL_GRACE)
    except asyncio.CancelledError:
        signal_group(pgid, signal.SIGKILL)  # the turn was interrupted: stop the hook at once
        raise
    finally:
        transport.close()
    out, err = (bytes(protocol.buffers[fd]).decode("utf-8", "replace") for fd in (1, 2))
    return HookRun(None if timed_out else transport.get_returncode(), out, err, timed_out)

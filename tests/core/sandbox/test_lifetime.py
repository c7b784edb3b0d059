"""Without a sandbox (mode off, or none on this OS) every process a command started is still found by its tag
and ended: at the command's timeout, by kill_command, and when the session ends."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from anvil.core.sandbox.lifetime import TAG_VARIABLE, tagged_pids
from anvil.core.tools.base import ToolContext
from anvil.core.tools.shell.processes import shell_session
from anvil.core.tools.shell.shell_tools import KillCommand
from tests.core.sandbox.conftest import processes_with, run


def unsandboxed(tmp_path: Path, session: str) -> ToolContext:
    root = tmp_path / "project"
    root.mkdir(parents=True, exist_ok=True)
    ctx = ToolContext(root=root, data_dir=tmp_path / "data", session_id=f"{session}-{os.getpid()}")
    shell_session(ctx).kill_grace = 0.3
    return ctx


async def wait(condition: object, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_every_process_carries_its_commands_tag(tmp_path: Path) -> None:
    ctx = unsandboxed(tmp_path, "tag")
    result = await run(ctx, f"echo ${TAG_VARIABLE}")
    assert result.output.startswith(f"{ctx.session_id}:")
    await ctx.close()


async def test_a_setsid_daemon_dies_at_the_timeout_without_a_sandbox(tmp_path: Path) -> None:
    ctx = unsandboxed(tmp_path, "timeout")
    marker = f"3001.{os.getpid()}1"
    result = await run(ctx, f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & sleep 30", timeout=1)
    assert "timed out" in result.summary and result.data is not None and result.data["sandboxed"] is False
    assert await wait(lambda: not processes_with(marker))
    await ctx.close()


async def test_a_daemon_left_by_a_finished_command_ends_with_the_session(tmp_path: Path) -> None:
    ctx = unsandboxed(tmp_path, "session")
    marker = f"3001.{os.getpid()}2"
    result = await run(ctx, f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & echo started")
    assert result.ok
    assert await wait(lambda: processes_with(marker))  # without a sandbox it outlives its command...
    await ctx.close()
    assert await wait(lambda: not processes_with(marker))  # ...but not the session


async def test_kill_command_reaches_what_a_background_job_started_with_setsid(tmp_path: Path) -> None:
    ctx = unsandboxed(tmp_path, "kill")
    marker = f"3001.{os.getpid()}3"
    await run(ctx, f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & sleep 600", background=True)
    assert await wait(lambda: processes_with(marker))
    await KillCommand().run(KillCommand.Args(id="bg1"), ctx)
    assert await wait(lambda: not processes_with(marker))
    await ctx.close()


async def test_tags_of_other_sessions_are_left_alone(tmp_path: Path) -> None:
    mine, theirs = unsandboxed(tmp_path / "a", "mine"), unsandboxed(tmp_path / "b", "theirs")
    marker = f"3001.{os.getpid()}4"
    await run(theirs, f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 &")
    assert await wait(lambda: processes_with(marker))
    await mine.close()
    await asyncio.sleep(0.3)
    assert processes_with(marker) and tagged_pids(shell_session(theirs).tags)
    await theirs.close()
    assert await wait(lambda: not processes_with(marker))

"""Command logs stay bounded: one log to its cap (head and tail kept, the cut stated), all logs to a total
(oldest first), a background command to its time limit; and a log that cannot be written fails nothing."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.shell.command_log import CappedLog, LogStore
from anvil.core.tools.shell.processes import shell_session
from anvil.core.tools.shell.shell_tools import CommandOutput, RunCommand

MB = 1024 * 1024


def numbered(first: int, last: int) -> str:
    return "".join(f"line {i:07d}\n" for i in range(first, last))


def test_a_log_over_its_cap_keeps_head_and_tail_and_says_what_was_cut(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "a.log", 64 * 1024)
    for start in range(0, 200_000, 1000):  # 2.6 MB in all, in many writes
        log.write(numbered(start, start + 1000))
    log.close()
    text = (tmp_path / "a.log").read_text()
    assert len(text.encode()) <= 64 * 1024
    assert text.startswith("line 0000000\nline 0000001\n")
    assert text.endswith("line 0199999\n")
    marker = next(line for line in text.splitlines() if "bytes cut from the middle" in line)
    cut = int(marker.split("…")[1].split("bytes")[0].replace(",", ""))
    assert cut == log.cut == log.written - (len(text.encode()) - len(marker.encode()) - 2)
    # nothing but whole lines on either side of the marker
    lines = [line for line in text.splitlines() if line and "bytes cut" not in line]
    assert all(line.startswith("line ") and len(line) == 12 for line in lines)


def test_a_log_under_its_cap_is_the_whole_output(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "b.log", MB)
    log.write(numbered(0, 100))
    log.close()
    assert (tmp_path / "b.log").read_text() == numbered(0, 100) and log.cut == 0


def test_a_full_disk_stops_the_log_once_and_loses_nothing_else(tmp_path: Path) -> None:
    log = CappedLog(Path("/dev/full"), MB)  # every write: ENOSPC
    log.write("first\n")
    log.write("second\n")
    log.close()
    assert log.error == "/dev/full: No space left on device" and not log.ok


@pytest.fixture
async def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "project"
    root.mkdir()
    context = ToolContext(root=root, data_dir=tmp_path / "data", session_id="logs",
                          settings=ToolSettings(log_cap=2 * MB, logs_total_cap=8 * MB, background_timeout=1.0))
    shell_session(context).kill_grace = 0.3
    yield context  # type: ignore[misc]
    await context.close()


async def test_yes_for_seconds_stays_under_the_cap_with_head_and_tail(ctx: ToolContext) -> None:
    tool = RunCommand()
    result = await tool.run(tool.Args(command="timeout 2 yes; echo THE-END"), ctx)
    assert result.data is not None
    log = Path(result.data["log_path"])
    size = log.stat().st_size
    assert size <= 2 * MB
    with log.open("rb") as f:
        head = f.read(4)
        f.seek(-8, os.SEEK_END)
        tail = f.read()
    assert head == b"y\ny\n" and tail == b"THE-END\n"
    assert b"bytes cut from the middle of this log" in log.read_bytes()
    assert "bytes of the middle were left out of it too" in result.output


async def test_the_oldest_logs_go_when_all_of_them_pass_the_total(ctx: ToolContext) -> None:
    logs = ctx.data_dir / "logs"
    old = []
    for i in range(7):  # 7 MB of older sessions' logs, oldest first
        path = logs / f"old{i}" / "x.log"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"x" * MB)
        os.utime(path, (time.time() - 1000 + i, time.time() - 1000 + i))
        old.append(path)
    tool = RunCommand()
    result = await tool.run(tool.Args(command="head -c 3000000 /dev/zero | tr '\\0' 'z'; echo"), ctx)
    assert result.ok
    remaining = sum(p.stat().st_size for p in logs.rglob("*") if p.is_file())
    assert remaining <= 8 * MB
    assert not old[0].exists() and not old[0].parent.exists()  # the oldest went first, its session dir too
    assert old[-1].exists() and Path(result.data["log_path"]).exists()  # type: ignore[index]


async def test_a_background_command_stops_at_its_time_limit(ctx: ToolContext) -> None:
    tool = RunCommand()
    started = await tool.run(tool.Args(command="echo up; sleep 30", background=True), ctx)
    assert "stopped after 1.0s (the time limit for background commands)" in started.output
    await asyncio.sleep(2.0)
    status = await CommandOutput().run(CommandOutput.Args(id="bg1"), ctx)
    assert "stopped at its time limit (1.0s)" in status.output


async def test_a_command_whose_log_cannot_be_written_still_runs(ctx: ToolContext,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    session = shell_session(ctx)
    monkeypatch.setattr(session.logs, "new_path", lambda label: Path("/dev/full"))
    tool = RunCommand()
    result = await tool.run(tool.Args(command="echo hello; echo again"), ctx)
    assert result.ok and result.output.startswith("hello\nagain\n")
    assert result.output.count("could not be saved") == 1 and "No space left on device" in result.output


def test_the_total_is_checked_only_every_tenth_of_the_cap(tmp_path: Path) -> None:
    store = LogStore(tmp_path / "logs", "s", total_cap=10 * MB)
    checks = []
    real = store.enforce
    store.enforce = lambda: checks.append(1) or real()  # type: ignore[method-assign]
    for _ in range(5):
        log = CappedLog(store.new_path("x"), MB)
        log.write("small\n")
        log.close()
        store.finished(log)
    assert len(checks) == 1  # the first log checks; 30 bytes since then do not

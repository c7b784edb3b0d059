"""Command logs stay bounded: one log to its cap (head and tail kept, the cut stated), all logs to a total
(oldest first), a background command to its time limit; and a log that cannot be written fails nothing."""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path

import pytest

from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.shell import command_log
from anvil.core.tools.shell.command_log import CappedLog, LogStore
from anvil.core.tools.shell.processes import shell_session
from anvil.core.tools.shell.shell_tools import CommandOutput, RunCommand
from tests.support.full_disk import FullDisk

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
    assert log.error == "/dev/full: No space left on device" and not log.ok and log.held == len("first\nsecond\n")
    assert len(log.trouble.take()) == 1  # said once


# -- a full disk, and space again: the log is completed --------------------------------------------------------


@pytest.fixture
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command_log, "RETRY_INTERVAL", 0.0)  # every write tries the disk again


def test_output_held_while_the_disk_is_full_is_appended_when_space_returns(tmp_path: Path, no_wait: None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    log = CappedLog(tmp_path / "data" / "logs" / "a.log", MB)
    log.write(numbered(0, 10))
    disk.full = True
    for start in range(10, 40, 10):
        log.write(numbered(start, start + 10))  # raised nothing before either; it stopped the log for good
    assert log.held == len(numbered(10, 40)) and disk.refused >= 3
    assert log.path.read_text() == numbered(0, 10)  # no half piece on disk
    disk.full = False
    log.write(numbered(40, 50))
    log.close()
    assert log.path.read_text() == numbered(0, 50) and log.ok and log.held == 0
    told = log.trouble.take()
    assert len(told) == 2 and "No space left on device" in told[0] and "in memory" in told[0]
    assert "works again" in told[1] and "held in memory is written now" in told[1]


def test_a_log_that_could_not_even_be_created_is_written_when_space_returns(tmp_path: Path, no_wait: None,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    disk.full = True
    log = CappedLog(tmp_path / "data" / "logs" / "b.log", MB)
    log.write("first\n")
    assert not log.path.exists() and log.held == 6
    disk.full = False
    log.write("second\n")
    log.close()
    assert log.path.read_text() == "first\nsecond\n" and stat.S_IMODE(log.path.stat().st_mode) == 0o600


def test_what_a_full_disk_holds_stays_within_the_cap_and_the_cut_is_stated(tmp_path: Path, no_wait: None,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    log = CappedLog(tmp_path / "data" / "c.log", 64 * 1024)
    log.write(numbered(0, 1000))  # 13 KB: part of the head
    disk.full = True
    for start in range(1000, 100_000, 1000):  # 1.3 MB more while full
        log.write(numbered(start, start + 1000))
    assert log.held <= 64 * 1024
    disk.full = False
    log.close()
    text = log.path.read_text()
    assert len(text.encode()) <= 64 * 1024
    assert text.startswith(numbered(0, 1000)) and text.endswith("line 0099999\n")
    marker = next(line for line in text.splitlines() if "bytes cut from the middle" in line)
    cut = int(marker.split("…")[1].split("bytes")[0].replace(",", ""))
    assert cut == log.cut == log.written - (len(text.encode()) - len(marker.encode()) - 2)
    lines = [line for line in text.splitlines() if line and "bytes cut" not in line]
    assert all(line.startswith("line ") and len(line) == 12 for line in lines)
    numbers = [int(line[5:]) for line in lines]
    assert numbers == sorted(numbers)  # in order, nothing twice


def test_a_finished_log_still_holding_output_is_written_when_the_next_command_starts(
        tmp_path: Path, no_wait: None, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(tmp_path / "data", monkeypatch)
    store = LogStore(tmp_path / "data" / "logs", "s", total_cap=10 * MB)
    first = store.new_log("first", MB)
    disk.full = True
    first.write("while full\n")
    first.close()
    store.finished(first)
    assert store.waiting == [first]
    disk.full = False
    second = store.new_log("second", MB)
    assert store.waiting == [] and first.path.read_text() == "while full\n"
    second.close()
    store.finished(second)
    # closing the session while the disk is full again: what is held is said lost, once
    third = store.new_log("third", MB)
    disk.full = True
    third.write("lost\n")
    third.close()
    store.finished(third)
    store.close()
    told = store.trouble.take()
    assert "5 bytes of output of 1 command(s) could not be written" in told[-1]


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
    assert result.output.count("could not all be saved to its log yet") == 1
    assert "No space left on device" in result.output


async def test_a_command_run_on_a_full_disk_has_its_whole_log_once_space_returns(
        ctx: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(ctx.data_dir, monkeypatch)
    tool = RunCommand()
    await tool.run(tool.Args(command="echo warm-up"), ctx)  # the logs directory exists, as in a session
    disk.full = True
    result = await tool.run(tool.Args(command="seq 1 3000"), ctx)
    assert result.ok and result.output.count("could not all be saved to its log yet") == 1
    log = Path(result.data["log_path"])  # type: ignore[index]
    disk.full = False
    again = await tool.run(tool.Args(command="echo after"), ctx)
    assert "could not" not in again.output
    assert log.read_text() == "".join(f"{i}\n" for i in range(1, 3001))  # the log stopped for good before
    told = [message for trouble in ctx.troubles for message in trouble.take()]
    assert len(told) == 2 and "No space left on device" in told[0] and "works again" in told[1]


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

"""run_command, command_output, kill_command and the process machinery under them, with real processes."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from anvil.core.tools.base import ToolContext, ToolResult
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.output_capture import HeadTail, clean_output
from anvil.core.tools.shell.processes import shell_session
from anvil.core.tools.shell.shell_tools import SHELL_TOOLS, CommandOutput, KillCommand, RunCommand

run_tool, output_tool, kill_tool = RunCommand(), CommandOutput(), KillCommand()


@pytest.fixture
async def ctx(tmp_path: Path) -> AsyncIterator[ToolContext]:
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    context = ToolContext(root=root, data_dir=tmp_path / "data", session_id="s1")
    shell_session(context).kill_grace = 0.3  # keep the SIGTERM -> SIGKILL escalation fast
    yield context
    await context.close()


async def run(ctx: ToolContext, command: str, **kwargs: Any) -> ToolResult:
    return await run_tool.run(run_tool.Args(command=command, **kwargs), ctx)


async def job_output(ctx: ToolContext, job_id: str) -> ToolResult:
    return await output_tool.run(output_tool.Args(id=job_id), ctx)


def first_line(result: ToolResult) -> str:
    return result.output.splitlines()[0]


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a reaper (a killed shell's children are reparented)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def read_until(ctx: ToolContext, job_id: str, text: str, within: float = 5.0) -> str:
    """The job's output (without the status lines) gathered until ``text`` appears."""
    seen = ""
    deadline = time.monotonic() + within
    while text not in seen:
        assert time.monotonic() < deadline, f"{text!r} never appeared; saw {seen!r}"
        seen += (await job_output(ctx, job_id)).output.split("\n", 1)[1] + "\n"
        await asyncio.sleep(0.05)
    return seen


async def wait_finished(ctx: ToolContext, job_id: str, within: float = 5.0) -> ToolResult:
    deadline = time.monotonic() + within
    while True:
        result = await job_output(ctx, job_id)
        assert result.data is not None
        if not result.data["running"]:
            return result
        assert time.monotonic() < deadline, f"{job_id} is still running"
        await asyncio.sleep(0.05)


def child_pid(output: str) -> int:
    found = re.search(r"^child=(\d+)$", output, re.M)
    assert found, output
    return int(found.group(1))


def test_tool_flags_and_phase() -> None:
    assert [t.name for t in SHELL_TOOLS] == ["run_command", "command_output", "kill_command"]
    assert run_tool.approval == "command" and run_tool.command(run_tool.Args(command="ls -la")) == "ls -la"
    assert kill_tool.approval == "rule" and output_tool.approval == "none"
    assert run_tool.mutates and kill_tool.mutates and not output_tool.mutates
    assert output_tool.polls and not run_tool.polls
    assert run_tool.phase(run_tool.Args(command="pytest -x tests")) == "Running pytest -x tests"
    long = run_tool.phase(run_tool.Args(command="echo " + "x" * 100 + "\necho two"))
    assert long.startswith("Running echo xxx") and long.endswith("…") and len(long) < 60


async def test_working_directory_persists(ctx: ToolContext) -> None:
    moved = await run(ctx, "cd sub")
    assert "Working directory is now sub" in moved.output
    assert first_line(await run(ctx, "pwd")) == str(ctx.root / "sub")
    back = await run(ctx, "cd .. && pwd")
    assert first_line(back) == str(ctx.root) and "Working directory is now the project root." in back.output


async def test_cd_outside_the_project_is_reset_with_a_note(ctx: ToolContext) -> None:
    await run(ctx, "cd sub")
    result = await run(ctx, "cd / && ls > /dev/null")
    assert "outside the project" in result.output and "reset to the project root" in result.output
    assert first_line(await run(ctx, "pwd")) == str(ctx.root)


async def test_cd_into_an_allowed_directory_is_kept(ctx: ToolContext, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    ctx.settings.allowed_dirs = [other]
    await run(ctx, f"cd {other}")
    assert first_line(await run(ctx, "pwd")) == str(other.resolve())


async def test_a_deleted_working_directory_falls_back_to_the_root(ctx: ToolContext) -> None:
    await run(ctx, "mkdir -p doomed && cd doomed")
    (ctx.root / "doomed").rmdir()
    result = await run(ctx, "pwd")
    assert first_line(result) == str(ctx.root) and "no longer exists" in result.output


async def test_errors_name_the_command_line(ctx: ToolContext) -> None:
    result = await run(ctx, "true\nif then")
    assert "line 2: syntax error" in result.output


async def test_exit_codes_are_kept_and_exit_does_not_lose_the_directory(ctx: ToolContext) -> None:
    result = await run(ctx, "cd sub; exit 3")
    assert result.data is not None and result.data["exit_code"] == 3
    assert not result.ok and result.summary.startswith("exit 3 · ")
    assert "[exit 3 · " in result.output
    assert first_line(await run(ctx, "pwd")) == str(ctx.root / "sub")
    failed = await run(ctx, "false")
    assert failed.data is not None and failed.data["exit_code"] == 1
    ok = await run(ctx, "true")
    assert ok.ok and ok.summary.startswith("exit 0 · ") and ok.output.startswith("(no output)")


async def test_syntax_error_reports_bash_message(ctx: ToolContext) -> None:
    result = await run(ctx, "if then")
    assert not result.ok and "syntax error" in result.output


async def test_timeout_kills_the_whole_process_group(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "sleep 30 & echo $!; wait", timeout=1)
    assert time.monotonic() - started < 10
    child = int(first_line(result))
    assert await gone(child), "the command's child survived the timeout"
    assert result.summary == "timed out after 1s" and not result.ok
    assert result.data is not None and result.data["timed_out"]
    assert "did not finish within 1s" in result.output


async def test_timeout_escalates_to_sigkill(ctx: ToolContext) -> None:
    ctx.settings.default_timeout = 0.5
    result = await run(ctx, "trap '' TERM; sleep 30 & echo $!; wait")
    child = int(first_line(result))
    assert "timed out after 0.5s" in result.output
    assert await gone(child), "a child ignoring SIGTERM survived"


async def test_timeout_is_capped_at_the_maximum(ctx: ToolContext) -> None:
    ctx.settings.max_timeout = 2
    result = await run(ctx, "true", timeout=500)
    assert result.ok and "capped at the maximum of 2s" in result.output


async def test_stdin_is_closed(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "cat; read line; echo read=$?", timeout=5)
    assert time.monotonic() - started < 3
    assert first_line(result) == "read=1"


async def test_noninteractive_environment(ctx: ToolContext) -> None:
    result = await run(ctx, 'echo "$PAGER|$GIT_PAGER|$TERM|$GIT_TERMINAL_PROMPT|$GIT_EDITOR|$ANVIL_ENGINE"; tty')
    assert first_line(result) == "cat|cat|dumb|0|true|off"  # an anvil run by the model starts no warm engine
    assert "not a tty" in result.output


async def test_output_interleaves_stdout_and_stderr(ctx: ToolContext) -> None:
    result = await run(ctx, "echo out1; sleep 0.05; echo err1 >&2; sleep 0.05; echo out2")
    assert result.output.splitlines()[:3] == ["out1", "err1", "out2"]


async def test_ansi_and_progress_rewrites_are_cleaned(ctx: ToolContext) -> None:
    result = await run(ctx, r"printf '\033[1;31mred\033[0m plain\n'; printf 'progress 10%%\rprogress 100%%\n'")
    assert result.output.splitlines()[:2] == ["red plain", "progress 100%"]
    assert "\x1b" not in result.output


async def test_invalid_utf8_is_replaced(ctx: ToolContext) -> None:
    result = await run(ctx, r"printf 'caf\303\251 \377\n'")
    assert first_line(result) == "café \ufffd"


async def test_long_output_keeps_head_and_tail_and_logs_everything(ctx: ToolContext) -> None:
    ctx.settings.output_budget = 2000
    result = await run(ctx, "seq 1 20000")
    lines = result.output.splitlines()
    assert lines[:3] == ["1", "2", "3"] and "20000" in lines
    assert "cut from the middle" in result.output
    assert len(result.output) < 3000
    assert result.data is not None and result.data["truncated"]
    log = Path(result.data["log_path"])
    assert str(log) in result.output and log.is_relative_to(ctx.data_dir / "logs" / "s1")
    assert log.read_text() == "".join(f"{n}\n" for n in range(1, 20001))


async def test_short_output_is_not_truncated_but_still_logged(ctx: ToolContext) -> None:
    result = await run(ctx, "echo hello")
    assert result.data is not None and not result.data["truncated"]
    assert "cut" not in result.output and result.data["log_path"] not in result.output
    assert Path(result.data["log_path"]).read_text() == "hello\n"


async def test_processes_left_holding_the_output_are_stopped(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "sleep 30 & echo $!")
    assert time.monotonic() - started < 5
    assert await gone(int(first_line(result)))
    assert "background=true" in result.output


async def test_interrupt_kills_the_process_group(ctx: ToolContext) -> None:
    pid_file = ctx.root / "pid"
    task = asyncio.create_task(run(ctx, f"sleep 30 & echo $! > {pid_file}; wait", timeout=60))
    deadline = time.monotonic() + 5
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(int(pid_file.read_text()))


async def test_background_start_output_and_exit(ctx: ToolContext) -> None:
    started = time.monotonic()
    result = await run(ctx, "echo started; sleep 0.4; echo finished; exit 4", background=True)
    assert time.monotonic() - started < 2  # it does not wait for the 0.4 s the command takes
    assert result.summary == "started bg1" and 'command_output(id="bg1")' in result.output
    seen = await read_until(ctx, "bg1", "finished")
    assert seen.count("started") == 1  # each read shows only new output
    final = await wait_finished(ctx, "bg1")
    assert final.data == {"id": "bg1", "running": False, "exit_code": 4}
    assert "exit 4 after" in first_line(final) and "(no new output)" in final.output
    assert final.summary == "bg1 exit 4 · 0 new lines"


async def test_background_job_keeps_the_session_directory(ctx: ToolContext) -> None:
    await run(ctx, "cd sub")
    await run(ctx, "pwd", background=True)
    assert str(ctx.root / "sub") in await read_until(ctx, "bg1", str(ctx.root / "sub"))


async def test_kill_command_stops_the_job_and_its_children(ctx: ToolContext) -> None:
    await run(ctx, "sleep 30 & echo child=$!; echo ready; wait", background=True)
    child = child_pid(await read_until(ctx, "bg1", "ready"))
    result = await kill_tool.run(kill_tool.Args(id="bg1"), ctx)
    assert result.output.startswith("Stopped bg1") and "ready" in result.output
    assert result.summary == "stopped bg1"
    assert await gone(child)
    status = await job_output(ctx, "bg1")
    assert "stopped by kill_command" in first_line(status)


async def test_unknown_job_id_lists_the_known_ones(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="No background commands were started"):
        await job_output(ctx, "bg1")
    await run(ctx, "sleep 5", background=True)
    with pytest.raises(ToolError, match=r"no background command with id 'bg7'.*Known ids: bg1 \(running"):
        await job_output(ctx, "bg7")
    with pytest.raises(ToolError, match="Known ids: bg1"):
        await kill_tool.run(kill_tool.Args(id="nope"), ctx)
    await ctx.close()


async def test_closing_the_context_kills_background_jobs(ctx: ToolContext) -> None:
    await run(ctx, "sleep 30 & echo child=$!; wait", background=True)
    child = child_pid(await read_until(ctx, "bg1", "child="))
    shell_pid = shell_session(ctx).jobs["bg1"].pid
    await ctx.close()
    assert await gone(child) and await gone(shell_pid)


async def test_killing_everything_at_once_needs_no_event_loop_and_reaches_escaped_children(ctx: ToolContext) -> None:
    # What anvil does when it must end at once (a signal, and the orderly close ran out of time): no awaiting.
    await run(ctx, "setsid sleep 30 & echo child=$!; echo ready; wait", background=True)
    child = child_pid(await read_until(ctx, "bg1", "ready"))
    shell_pid = shell_session(ctx).jobs["bg1"].pid
    left = child_pid((await run(ctx, "setsid sleep 30 >/dev/null 2>&1 & echo child=$!")).output)  # a command's
    assert alive(child) and alive(shell_pid) and alive(left)  # leftover lives until the session ends
    shell_session(ctx).kill_all_now()
    assert await gone(child) and await gone(shell_pid) and await gone(left)


def test_clean_output() -> None:
    assert clean_output("\x1b[32mok\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n") == "ok link\n"
    assert clean_output("N\bNA\bAM\bME\n") == "NAME\n"
    assert clean_output("a\r\nb\r\n") == "a\nb\n"
    assert clean_output("bell\x07\n") == "bell\n"


def test_head_tail_cuts_at_line_boundaries() -> None:
    text = "".join(f"line {n}\n" for n in range(1000))
    kept = HeadTail.of(text, 500)
    rendered = kept.render(Path("/logs/x.log"))
    assert kept.truncated and rendered.startswith("line 0\n")
    assert rendered.endswith("line 999\n")
    assert "full output in /logs/x.log" in rendered
    head, _, rest = rendered.partition("[… ")
    cut = int(rest.split(" characters")[0].replace(",", ""))
    shown = head + rest.split("…]\n", 1)[1]
    assert cut + len(shown) == len(text)
    assert all(line.startswith("line ") for line in shown.splitlines())
    assert HeadTail.of("short\n", 500).render() == "short\n"
    assert kept.last(30).endswith("line 999\n") and kept.last(30).startswith("line")

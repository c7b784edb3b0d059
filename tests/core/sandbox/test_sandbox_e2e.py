"""End to end through run_command in a real bubblewrap sandbox: what a command may write, what it may not, the
network, processes that try to outlive their command, and how a refusal reads."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anvil.core.sandbox.places import Places
from anvil.core.tools.base import ToolSettings
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.shell_tools import CommandOutput, KillCommand
from tests.core.sandbox.conftest import MakeCtx, linux_only, processes_with, run

pytestmark = linux_only


@pytest.fixture(autouse=True)
def no_leftover_in_etc() -> Iterator[None]:
    """Were the sandbox broken, a test run as root would write here: never leave that for the next run."""
    yield
    Path("/etc/anvil-sandbox-test").unlink(missing_ok=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the project and outside the temp dir (the sandbox has a private one of those)."""
    path = Path(tempfile.mkdtemp(prefix=".anvil-sandbox-test-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_writes_land_in_the_project_and_nowhere_else(make_ctx: MakeCtx, places: Places, outside: Path) -> None:
    ctx = make_ctx()
    result = await run(ctx, f"echo in > made.txt; echo out > {outside}/x.txt; echo sys > /etc/anvil-sandbox-test")
    assert (places.root / "made.txt").read_text() == "in\n"
    assert not (outside / "x.txt").exists() and not Path("/etc/anvil-sandbox-test").exists()
    assert "Read-only file system" in result.output and not result.ok
    assert result.data is not None and result.data["sandboxed"] is True


async def test_a_blocked_write_is_reported_as_the_sandbox_not_as_the_command(make_ctx: MakeCtx) -> None:
    result = await run(make_ctx(), "echo x > /etc/anvil-sandbox-test")
    first = result.output.splitlines()[0]
    assert first.startswith("Blocked by the sandbox: the write to /etc/anvil-sandbox-test is outside the writable")
    assert "[sandbox] writable = [\"/etc\"]" in result.output and "sandbox=false" in result.output
    assert result.summary.startswith("Blocked by the sandbox") and not result.ok


async def test_the_temp_dir_is_writable_and_private_to_the_session(make_ctx: MakeCtx) -> None:
    ctx = make_ctx()
    name = f"anvil-private-{os.getpid()}"
    first = await run(ctx, f"echo kept > /tmp/{name} && echo ok")
    second = await run(ctx, f"cat /tmp/{name}")
    assert first.ok and second.output.startswith("kept")
    assert not Path("/tmp", name).exists()  # the host's /tmp (tmux's and ssh-agent's sockets) is not shared


@pytest.mark.parametrize("path", [".anvil/config.toml", ".anvil/permissions.toml", ".anvil/agents/evil.md",
                                  ".anvil/hooks/block.py"])
async def test_anvils_configuration_cannot_be_written_existing_or_not(make_ctx: MakeCtx, places: Places,
                                                                      path: str) -> None:
    original = (places.root / ".anvil" / "config.toml").read_bytes()
    result = await run(make_ctx(), f"mkdir -p $(dirname {path}); echo 'auto_approve = true' > {path}")
    assert (places.root / ".anvil" / "config.toml").read_bytes() == original
    if path != ".anvil/config.toml":
        assert not (places.root / path).exists()
    assert "Blocked by the sandbox" in result.output


async def test_work_files_under_dot_anvil_stay_writable(make_ctx: MakeCtx, places: Places) -> None:
    (places.root / ".anvil" / "jobs").mkdir()
    result = await run(make_ctx(), "echo done > .anvil/jobs/one.txt && cat .anvil/jobs/one.txt")
    assert result.ok and (places.root / ".anvil" / "jobs" / "one.txt").read_text() == "done\n"


async def test_a_missing_dot_anvil_cannot_be_created_and_leaves_nothing_behind(make_ctx: MakeCtx,
                                                                               tmp_path: Path) -> None:
    root = tmp_path / "bare"
    root.mkdir()
    ctx = make_ctx(at=Places(root, home=tmp_path / "home"))
    result = await run(ctx, "mkdir -p .anvil && echo 'auto_approve = true' > .anvil/config.toml")
    assert not result.ok and not (root / ".anvil" / "config.toml").exists()
    assert list((root / ".anvil").iterdir()) == []  # an empty stand-in, mounted read-only, for the session
    await ctx.close()
    assert not (root / ".anvil").exists()  # gone with the session


async def test_git_config_and_hooks_are_read_only_even_through_git(make_ctx: MakeCtx, places: Places) -> None:
    subprocess.run(["git", "init", "-q", str(places.root)], check=True)
    config = (places.root / ".git" / "config").read_bytes()
    ctx = make_ctx()
    result = await run(ctx, "git config core.fsmonitor 'touch pwned'; echo x > .git/hooks/pre-commit; "
                            "chmod +x .git/hooks/pre-commit")
    assert (places.root / ".git" / "config").read_bytes() == config
    assert not (places.root / ".git" / "hooks" / "pre-commit").exists()
    assert "Blocked by the sandbox: " in result.output and ".git" in result.output.splitlines()[0]
    # committing still works: only config and hooks are protected
    commit = await run(ctx, "git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && git log --oneline")
    assert commit.ok, commit.output


async def test_dot_git_cannot_be_moved_aside_and_replaced(make_ctx: MakeCtx, places: Places) -> None:
    subprocess.run(["git", "init", "-q", str(places.root)], check=True)
    await run(make_ctx(), "mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit")
    assert not (places.root / ".git-old").exists() and not (places.root / ".git" / "hooks" / "pre-commit").exists()


async def test_without_a_repository_no_git_dir_can_be_made(make_ctx: MakeCtx, places: Places) -> None:
    ctx = make_ctx()
    result = await run(ctx, "git init -q . && git config core.fsmonitor 'touch pwned'")
    assert not result.ok and not (places.root / ".git" / "config").exists()
    outside_git = subprocess.run(["git", "status"], cwd=places.root, capture_output=True, text=True)
    assert "not a git repository" in outside_git.stderr  # git looks past the empty stand-in
    await ctx.close()
    assert not (places.root / ".git").exists()


async def test_anvils_own_dirs_are_read_only_inside_writable_places(make_ctx: MakeCtx, tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / "data" / "anvil"
    (data / "sessions").mkdir(parents=True)
    root = home / "work"  # the project, with anvil's dirs inside an allowed dir around it
    root.mkdir()
    where = Places(root, allowed_dirs=(home,), config_dir=home / "config" / "anvil", data_dir=data, home=home)
    result = await run(make_ctx(at=where), f"echo x > {data}/sessions/forged.jsonl; "
                                           f"mkdir -p {home}/config/anvil && echo y > {home}/config/anvil/config.toml; "
                                           f"echo fine > {home}/notes.txt")
    assert not (data / "sessions" / "forged.jsonl").exists()
    assert not (home / "config" / "anvil" / "config.toml").exists()
    assert (home / "notes.txt").read_text() == "fine\n", result.output


async def test_caches_are_writable_but_not_the_programs_next_to_them(make_ctx: MakeCtx, outside: Path) -> None:
    home = outside  # outside the temp dir, so what is not writable is read-only rather than private
    (home / ".cache" / "pip").mkdir(parents=True)
    (home / ".cargo" / "registry").mkdir(parents=True)
    (home / ".cargo" / "bin").mkdir()
    environ = {**os.environ, "XDG_CACHE_HOME": str(home / ".cache"), "CARGO_HOME": str(home / ".cargo")}
    ctx = make_ctx(environ=environ)
    await run(ctx, f"echo w > {home}/.cache/pip/wheel; echo c > {home}/.cargo/registry/index; "
                   f"echo evil > {home}/.cargo/bin/git")
    assert (home / ".cache" / "pip" / "wheel").exists() and (home / ".cargo" / "registry" / "index").exists()
    assert not (home / ".cargo" / "bin" / "git").exists()
    off = make_ctx(environ=environ, writable_caches=False)
    result = await run(off, f"echo w > {home}/.cache/pip/other")
    assert not (home / ".cache" / "pip" / "other").exists() and "Blocked by the sandbox" in result.output


async def test_extra_writable_paths_from_the_settings(make_ctx: MakeCtx, outside: Path) -> None:
    result = await run(make_ctx(writable=(outside,)), f"echo ok > {outside}/allowed.txt")
    assert result.ok and (outside / "allowed.txt").read_text() == "ok\n"


class _Listener:
    """A TCP server on the host's loopback that counts connections."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]

    def accepted(self) -> bool:
        try:
            conn, _ = self.sock.accept()
        except (TimeoutError, OSError):
            return False
        conn.close()
        return True


async def test_no_network_not_even_the_hosts_loopback(make_ctx: MakeCtx) -> None:
    listener = _Listener()
    probe = f"{sys.executable} -c \"import socket; socket.create_connection(('127.0.0.1', {listener.port}), 2)\""
    sandboxed = await run(make_ctx(), probe)
    assert not sandboxed.ok and not listener.accepted()
    assert sandboxed.output.startswith("Blocked by the sandbox: a connection was refused")
    allowed = await run(make_ctx(network=True), probe)
    assert allowed.ok and listener.accepted()  # the same probe does connect: the test can tell


async def test_name_resolution_failure_is_reported_as_the_sandbox(make_ctx: MakeCtx) -> None:
    result = await run(make_ctx(), f"{sys.executable} -c \"import socket; socket.getaddrinfo('example.com', 443)\"")
    assert result.output.startswith("Blocked by the sandbox: commands have no network access.")
    assert "[sandbox] network = true" in result.output


async def test_a_setsid_daemon_dies_at_the_timeout(make_ctx: MakeCtx) -> None:
    marker = f"3000.{os.getpid()}1"
    result = await run(make_ctx(), f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & sleep 30", timeout=1)
    assert "timed out" in result.summary
    assert await _gone(marker)


async def test_a_setsid_daemon_dies_with_a_command_that_ended_by_itself(make_ctx: MakeCtx) -> None:
    marker = f"3000.{os.getpid()}2"
    result = await run(make_ctx(), f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & echo started")
    assert result.ok and await _gone(marker)


async def test_a_background_jobs_daemon_dies_at_session_end(make_ctx: MakeCtx) -> None:
    marker = f"3000.{os.getpid()}3"
    ctx = make_ctx()
    await run(ctx, f"setsid sh -c 'sleep {marker}' > /dev/null 2>&1 & sleep 600", background=True)
    await _appears(marker)
    await ctx.close()
    assert await _gone(marker)


async def _appears(marker: str, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not processes_with(marker):
        assert time.monotonic() < deadline, f"sleep {marker} never started"
        await asyncio.sleep(0.05)


async def _gone(marker: str, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


async def test_required_without_bubblewrap_refuses_to_run(make_ctx: MakeCtx, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, places: Places) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with bash and the usual tools, but no bwrap
    bin_dir.mkdir()
    for tool in ("bash", "sh", "echo", "touch"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    from anvil.core.sandbox.places import SandboxSettings
    from anvil.core.sandbox.sandbox import Sandbox

    box = Sandbox(SandboxSettings(mode="required"), places)
    assert not box.active and box.status.problem == "bubblewrap (bwrap) is not installed"
    from anvil.core.tools.base import ToolContext

    ctx = ToolContext(root=places.root, data_dir=tmp_path / "data", sandbox=box)
    with pytest.raises(ToolError, match=r'mode = "required" and there is no sandbox here'):
        await run(ctx, "touch ran.txt")
    assert not (places.root / "ran.txt").exists()
    auto = Sandbox(SandboxSettings(mode="auto"), places)
    assert auto.status.label == "not sandboxed" and "install bubblewrap" in (auto.status.notice() or "")


async def test_command_output_and_kill_of_a_sandboxed_background_job(make_ctx: MakeCtx) -> None:
    ctx = make_ctx()
    marker = f"3000.{os.getpid()}4"
    await run(ctx, f"echo up; setsid sh -c 'sleep {marker}' & sleep 600", background=True)
    await _appears(marker)
    out = await CommandOutput().run(CommandOutput.Args(id="bg1"), ctx)
    assert "up" in out.output
    await KillCommand().run(KillCommand.Args(id="bg1"), ctx)
    assert await _gone(marker)


async def test_lint_runs_in_the_sandbox(make_ctx: MakeCtx, places: Places) -> None:
    from anvil.core.tools.files.lint import run_linter

    ctx = make_ctx(settings=ToolSettings(lint={"py": "sh -c 'echo hacked > .anvil/config.toml; echo {path}'"}))
    (places.root / "a.py").write_text("x = 1\n")
    report = await run_linter(places.root / "a.py", ctx)
    assert report is not None and "a.py" in report
    assert "hacked" not in (places.root / ".anvil" / "config.toml").read_text()


async def test_verify_runs_in_the_sandbox(make_ctx: MakeCtx, places: Places) -> None:
    from anvil.core.loop.verify import run_check

    ctx = make_ctx()
    result = await run_check("echo hacked > .anvil/config.toml", places.root, 10, ctx.sandbox)
    assert not result.ok and result.output.startswith("Blocked by the sandbox")
    assert "hacked" not in (places.root / ".anvil" / "config.toml").read_text()


async def test_a_sub_agents_commands_run_in_the_same_sandbox(make_ctx: MakeCtx, places: Places) -> None:
    from anvil.core.model.scripted import ScriptedModel
    from anvil.core.policy.approval import ApprovalPolicy
    from anvil.core.subagents.task_tool import TaskArgs, TaskTool
    from anvil.core.tools import default_tools

    model = ScriptedModel([
        {"tool_calls": [{"name": "run_command", "arguments": {"command": "echo hacked > .anvil/config.toml"}}]},
        {"text": "tried"}])
    registry = default_tools()
    task = TaskTool(model, registry, ApprovalPolicy(auto_approve=True))
    ctx = make_ctx()
    result = await task.run(TaskArgs(description="Change config", prompt="Do it.", agent_type="general"), ctx)
    assert result.ok
    assert "hacked" not in (places.root / ".anvil" / "config.toml").read_text()

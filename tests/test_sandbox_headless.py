"""The sandbox as `anvil -p` shows it: the start event, the notice without bubblewrap, mode "required", and
a model asking to run a command outside the sandbox (refused, even with --auto-approve)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from anvil.core.policy.approval import UNSANDBOXED_HEADLESS
from tests.conftest import anvil_command
from tests.core.sandbox.conftest import linux_only
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = linux_only


def run_anvil(project: Path, server: ScriptedOpenAIServer, *args: str,
              path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return subprocess.run(anvil_command(*args, "--model", "openai/scripted", "--api-base", server.url), cwd=project,
                          capture_output=True, text=True, timeout=120, env=env)


def events(result: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.fixture
def no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with bash and coreutils but no bubblewrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "sh", "touch", "echo", "git"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_the_first_stream_json_event_says_commands_are_sandboxed(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add({"text": "hi"})
    started = events(run_anvil(project, server, "-p", "x", "--output-format", "stream-json"))[0]
    assert started["type"] == "session_started"
    assert started["sandbox"] == {"mode": "auto", "active": True, "mechanism": "bubblewrap", "problem": None,
                                  "network": False}


def test_without_bubblewrap_text_mode_says_so_once_on_stderr(project: Path, server: ScriptedOpenAIServer,
                                                             no_bwrap_path: str) -> None:
    server.add({"text": "hi"})
    result = run_anvil(project, server, "-p", "x", path=no_bwrap_path)
    assert result.returncode == 0 and result.stdout == "hi\n"
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("anvil: Commands run without a sandbox: bubblewrap (bwrap) is not installed.")


def test_mode_required_without_bubblewrap_runs_no_command(project: Path, server: ScriptedOpenAIServer,
                                                          no_bwrap_path: str) -> None:
    (project / ".anvil").mkdir()
    (project / ".anvil" / "config.toml").write_text('[sandbox]\nmode = "required"\n')
    server.add({"tool_calls": [{"name": "run_command", "arguments": {"command": "touch ran.txt"}}]}, {"text": "ok"})
    result = run_anvil(project, server, "-p", "x", "--auto-approve", "--output-format", "stream-json",
                       path=no_bwrap_path)
    tool_result = next(e for e in events(result) if e["type"] == "tool_result")
    assert not tool_result["ok"] and 'mode = "required" and there is no sandbox here' in str(tool_result["output"])
    assert not (project / "ran.txt").exists()
    assert "No command will run: [sandbox] mode = \"required\"" in result.stderr


def test_a_request_to_leave_the_sandbox_is_refused_headless_even_with_auto_approve(
        project: Path, server: ScriptedOpenAIServer) -> None:
    target = Path.home() / f".anvil-headless-unsandboxed-{os.getpid()}"
    call = {"command": f"echo x > {target}", "sandbox": False, "reason": "it writes outside the project"}
    server.add({"tool_calls": [{"name": "run_command", "arguments": call}]}, {"text": "ok"})
    try:
        result = run_anvil(project, server, "-p", "x", "--auto-approve", "--output-format", "stream-json")
        tool_result = next(e for e in events(result) if e["type"] == "tool_result")
        assert tool_result["output"] == UNSANDBOXED_HEADLESS and not target.exists()
    finally:
        target.unlink(missing_ok=True)

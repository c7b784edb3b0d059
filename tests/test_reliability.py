"""Issue 16 as a person meets it, headless: a file name too long to exist, a full data directory, secrets a command
prints, the modes of what anvil writes. Each run is then resumed the way `anvil -c` does."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.input import DummyInput
from prompt_toolkit.output import DummyOutput

from anvil.config import Settings, data_dir
from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.store import read_session
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.headless import run_headless
from anvil.plain.repl import PlainRepl
from anvil.runtime import open_runtime
from anvil.tui.prompt_input import History as TuiHistory
from tests.conftest import anvil_command
from tests.support.full_disk import FullDisk, tmpfs_available, tmpfs_shell
from tests.support.mcp_servers import demo_config
from tests.support.openai_server import ScriptedOpenAIServer

LONG_NAME = "a" * 300 + ".txt"


def headless(project: Path, turns: list[dict[str, Any]], *, resume: bool = False, tools: tuple[Tool, ...] = (),
             **settings: Any) -> tuple[int, list[dict[str, Any]], Any]:
    """One `anvil -p ... --output-format stream-json` run in this process: (exit code, events, runtime)."""
    runtime = open_runtime(Settings(model="scripted", auto_approve=True, **settings), project,
                           model=ScriptedModel(turns), interactive=False, continue_latest=resume)
    for tool in tools:
        runtime.agent.tools.add(tool)
    out, err = io.StringIO(), io.StringIO()
    code = asyncio.run(run_headless(runtime, "go", "stream-json", out, err))
    return code, [json.loads(line) for line in out.getvalue().splitlines()], runtime


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


# -- a file name the filesystem cannot hold ----------------------------------------------------------------


def test_writing_a_300_character_file_name_ends_the_turn_and_the_session_resumes(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where the existence check says False for a name too long (as os.path.exists does; Path.exists raises here),
    # write_file checkpoints the path, its write fails with a friendly error, and the turn's end hashed the path:
    # ENAMETOOLONG, a traceback, exit 1, and the same at every `anvil -c`.
    monkeypatch.setattr(Path, "exists", lambda self, **kw: os.path.exists(self))
    code, events, _ = headless(project, [call("write_file", path=LONG_NAME, content="x\n"), {"text": "done"}])
    assert code == 0
    result = of_type(events, "tool_result")[0]
    assert not result["ok"] and "File name too long" in result["output"] and "\n" not in result["output"]
    assert of_type(events, "turn_ended")[0]["reason"] == "done"
    # `anvil -c`: crashed the same way every time before.
    code, events, runtime = headless(project, [{"text": "resumed"}], resume=True)
    assert code == 0 and of_type(events, "turn_ended")[0]["reason"] == "done"
    assert read_session(runtime.session.path).turns == 2


# -- a full data directory -----------------------------------------------------------------------------------


class DiskArgs(ToolArgs):
    pass


class SetDisk(Tool):
    """Stands in for whatever fills (or frees) the disk while a turn runs."""

    description = "Fill or free the disk."
    Args = DiskArgs

    def __init__(self, name: str, disk: FullDisk, full: bool) -> None:
        self.name, self.disk, self.full = name, disk, full

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        self.disk.full = self.full
        return ToolResult(f"disk full: {self.full}")


def test_a_full_data_directory_mid_turn_is_said_once_and_nothing_is_lost(
        project: Path, isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(data_dir(), monkeypatch)
    turns = [call("fill"), call("write_file", path="notes.txt", content="kept\n"),
             call("run_command", command="echo while the disk is full"), call("free"),
             call("run_command", command="echo space again"), {"text": "all done"}]
    code, events, runtime = headless(project, turns, tools=(SetDisk("fill", disk, True), SetDisk("free", disk, False)))
    assert code == 0 and disk.refused  # Session.append raised ENOSPC out of the turn before
    notices = [e["message"] for e in of_type(events, "notice")]
    session_file = str(runtime.session.path)
    assert len([n for n in notices if n.startswith(f"Could not write the session file {session_file}")]) == 1
    assert len([n for n in notices if n.startswith("Could not write the checkpoints")]) == 1
    assert len([n for n in notices if n.startswith("Writing the session file") and "works again" in n]) == 1
    assert len([n for n in notices if n.startswith("Could not write the command logs")]) == 1, notices
    assert len([n for n in notices if n.startswith("Writing the command logs") and "works again" in n]) == 1
    assert (project / "notes.txt").read_text() == "kept\n"
    state = read_session(runtime.session.path)  # every record reached the file once there was room
    tool_results = [m["content"] for m in state.messages if m["role"] == "tool"]
    assert len(tool_results) == 5 and "while the disk is full" in tool_results[2]
    # the command's log, held while the disk was full, was written when the next command started
    log = next(p for p in (data_dir() / "logs").rglob("*.log") if "while-the-disk" in p.name)
    assert log.read_text() == "while the disk is full\n"
    assert state.messages[-1]["content"] == "all done" and state.warnings == []
    # Resumed, the checkpoint written late still undoes the write.
    runtime = open_runtime(Settings(model="scripted"), project, model=ScriptedModel([]), continue_latest=True)
    assert runtime.undo is not None and runtime.undo.undo_last().ok
    assert not (project / "notes.txt").exists()


@pytest.mark.skipif(not tmpfs_available(), reason="needs unshare with user and mount namespaces (a real tmpfs)")
def test_a_real_full_tmpfs_under_the_project_and_the_data_directory(tmp_path: Path) -> None:
    """The same on a real 1 MB filesystem that a command fills up and empties again, then `anvil -c`."""
    mount = tmp_path / "small"
    script = tmp_path / "turns.json"
    script.write_text(json.dumps([
        call("run_command", command="head -c 4000000 /dev/zero > fill.bin; df -k . | tail -1"),
        call("write_file", path="notes.txt", content="written on a full disk\n"),
        call("run_command", command="rm fill.bin && echo freed"),
        {"text": "all done"},
    ]))
    again = tmp_path / "again.json"
    again.write_text(json.dumps([{"text": "resumed fine"}]))
    out = tmp_path / "out"
    out.mkdir()
    anvil = " ".join(anvil_command())
    shell = f"""
mkdir -p "{mount}/project" "{mount}/data"
cd "{mount}/project"
{anvil} -p go --model scripted:{script} --auto-approve --output-format stream-json > "{out}/first.jsonl" || true
{anvil} -p again -c --model scripted:{again} --output-format json > "{out}/second.json" || true
cp -r "{mount}/data" "{out}/data"
"""
    env = {**os.environ, "XDG_DATA_HOME": f"{mount}/data", "HOME": str(tmp_path)}
    result = tmpfs_shell(mount, 1024, shell, env)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in (out / "first.jsonl").read_text().splitlines()]
    notices = [e["message"] for e in of_type(events, "notice")]
    assert len([n for n in notices if n.startswith("Could not write the session file")]) == 1, notices
    assert any("works again" in n for n in notices), notices
    assert of_type(events, "turn_ended")[0]["reason"] == "done"
    second = json.loads((out / "second.json").read_text())
    assert second["result"] == "resumed fine" and second["stop_reason"] == "done"
    session = next((out / "data" / "anvil" / "sessions").rglob("*.jsonl"))
    state = read_session(session)
    assert state.turns == 2 and state.warnings == []
    assert len([m for m in state.messages if m["role"] == "tool"]) == 3


# -- secrets -----------------------------------------------------------------------------------------------


SECRET = "sk-test-0123456789abcdef"


def test_a_secret_a_command_prints_is_masked_in_what_anvil_writes(project: Path, server: ScriptedOpenAIServer,
                                                                  isolated_env: Path) -> None:
    server.add(call("run_command", command="echo token=$MY_SERVICE_TOKEN"), {"text": f"It is {SECRET}."})
    env = {**os.environ, "MY_SERVICE_TOKEN": SECRET, "SHORT_TOKEN": "abc"}
    result = subprocess.run(anvil_command("-p", "show it", "--model", "openai/scripted", "--api-base", server.url,
                                          "--auto-approve", "--output-format", "stream-json"),
                            cwd=project, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    # The model asked for the output and sees it.
    assert SECRET in next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert SECRET not in result.stdout and "[masked MY_SERVICE_TOKEN]" in result.stdout
    written = [p for p in (isolated_env / "data" / "anvil").rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in written) and any(p.suffix == ".log" for p in written)
    for path in written:
        assert SECRET not in path.read_text(errors="replace"), path
    session = next(p for p in written if p.suffix == ".jsonl")
    assert "token=[masked MY_SERVICE_TOKEN]" in session.read_text()


def test_mask_secrets_for_model_hides_them_from_the_model_too(project: Path, server: ScriptedOpenAIServer) -> None:
    server.add(call("run_command", command="echo $MY_SERVICE_TOKEN"), {"text": "ok"})
    env = {**os.environ, "MY_SERVICE_TOKEN": SECRET, "ANVIL_MASK_SECRETS_FOR_MODEL": "true"}
    result = subprocess.run(anvil_command("-p", "show it", "--model", "openai/scripted", "--api-base", server.url,
                                          "--auto-approve"), cwd=project, capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    seen = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"]
    assert SECRET not in seen and "[masked MY_SERVICE_TOKEN]" in seen


# -- modes -----------------------------------------------------------------------------------------------------


def test_everything_anvil_writes_is_private_and_an_old_tree_is_narrowed(project: Path, isolated_env: Path) -> None:
    old = os.umask(0o022)
    try:
        legacy = isolated_env / "data" / "anvil" / "sessions" / "old-project"
        legacy.mkdir(parents=True)
        (legacy / "old.jsonl").write_text("{}\n")  # 0644 in 0755 directories, as anvil wrote them before
        (project / ".env").write_text("API_TOKEN=abcdefgh12345678\n")
        (project / ".env").chmod(0o600)
        turns = [call("read_file", path=".env"), call("write_file", path=".env", content="API_TOKEN=changed12345\n"),
                 call("run_command", command="echo hello"), {"text": "done"}]
        code, _, _ = headless(project, turns)
        # Resumed: the checkpoints exist now, so their expiry runs and leaves its mark; an MCP server's stderr log
        again, _, _ = headless(project, [{"text": "again"}], resume=True, mcp_servers={"demo": demo_config()})
        # the input histories of both front ends (after a start, which narrows what is directly in the data dir)
        plain = PlainRepl(open_runtime(Settings(model="scripted"), project, interactive=True), input=DummyInput(),
                          output=DummyOutput())
        plain.prompt.history.append_string("a prompt with a secret in it")
        TuiHistory().add("a prompt with a secret in it")
    finally:
        os.umask(old)
    assert code == again == 0 and stat.S_IMODE((project / ".env").stat().st_mode) == 0o600
    root = isolated_env / "data" / "anvil"
    entries = [root, *root.rglob("*")]
    assert any(p.suffix == ".log" for p in entries) and any(len(p.name) == 64 for p in entries)  # a log, a blob
    names = {p.name for p in entries}
    assert {".last-expiry", "demo.log", "history", "plain_history"} <= names, sorted(names)
    for path in entries:
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, f"{path} is {oct(path.stat().st_mode)}"

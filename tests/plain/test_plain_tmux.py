"""End to end in a real terminal: tmux runs `anvil --plain` against the local scripted OpenAI-compatible server.

It types a prompt, approves the command with `y` and sees the file the command created; cycles the approval
mode with Shift+Tab; interrupts a streaming answer with Ctrl+C (read raw from the terminal while the turn
runs); and quits with Ctrl+D. The shell records the exit status. Skipped only when tmux is missing.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
from pathlib import Path

import pytest

from tests.conftest import StartServer
from tests.support.tmux import Pane, anvil_shell

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

LONG = "This answer goes on and on. " * 120
TURNS = [
    {"text": "I'll create the file with a command.",
     "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hello from plain > made.txt"}}]},
    {"text": "Created made.txt for you."},
    {"text": LONG},
    {"text": "Still here after the interrupt."},
]


def test_plain_repl_in_a_real_terminal(tmp_path: Path, project: Path, scripted_server: StartServer,
                                       isolated_env: Path) -> None:
    status_file = tmp_path / "exit-status"
    # 10 ms between chunks: the long answer streams for a few seconds, long enough to interrupt it
    url = scripted_server(TURNS, chunk_delay=0.01)
    anvil = anvil_shell(project, isolated_env, "--plain", "--model", "openai/scripted", "--api-base", url)
    shell = f"{anvil}; echo EXIT=$? > {shlex.quote(str(status_file))}; sleep 60"
    # the plain REPL prints into the terminal's scrollback: read 200 lines of it too
    with Pane("anvil-plain", shell, scrollback=200) as tmux:
        tmux.wait_text("mode: ask")  # the bottom toolbar: the prompt is up
        tmux.type("please create the file")
        tmux.send("Enter")
        tmux.wait_text("Approve run_command?")
        tmux.wait_text("$ echo hello from plain > made.txt")
        assert not (project / "made.txt").exists()
        tmux.send("y")
        tmux.wait(lambda: (project / "made.txt").exists(), "the file")
        assert (project / "made.txt").read_text() == "hello from plain\n"
        tmux.wait_text("Created made.txt for you.")
        assert "allowed once" in tmux.screen()

        tmux.wait_text("mode: ask")
        tmux.send("BTab")
        tmux.wait_text("mode: accept_edits")

        tmux.type("talk for a while")
        tmux.send("Enter")
        tmux.wait_text("This answer goes on and on.")
        tmux.send("C-c")
        tmux.wait_text("Interrupted.")
        assert tmux.screen().count("This answer goes on and on.") < 120

        tmux.type("are you there?")
        tmux.send("Enter")
        tmux.wait_text("Still here after the interrupt.")
        tmux.wait_text("mode: accept_edits")
        tmux.send("C-d")
        tmux.wait(status_file.exists, "anvil to exit", timeout=20)
        assert status_file.read_text().strip() == "EXIT=0"
        history = isolated_env / "data" / "anvil" / "plain_history"
        assert "please create the file" in history.read_text()


@pytest.mark.parametrize("signal_name, code", [("TERM", 143), ("HUP", 129)])
def test_a_signal_ends_the_plain_repl_mid_turn_with_its_command(tmp_path: Path, project: Path,
                                                                  isolated_env: Path, signal_name: str,
                                                                  code: int) -> None:
    """SIGTERM or SIGHUP mid-turn: the command is ended, the session closed, the shell gets 128 + the signal."""
    status_file, pid_file = tmp_path / "exit-status", project / "command.pid"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        {"text": "A long command.", "tool_calls": [{"name": "run_command", "arguments": {
            "command": f"echo $$ > {pid_file}; exec sleep 300"}}]},
        {"text": "never reached"}]))
    (isolated_env / "config" / "anvil").mkdir(parents=True, exist_ok=True)
    (isolated_env / "config" / "anvil" / "config.toml").write_text('[sandbox]\nmode = "off"\n')
    anvil = anvil_shell(project, isolated_env, "--plain", "--model", f"scripted:{script}", "--auto-approve")
    # a subshell that notes its pid, then becomes anvil: the pid to signal
    anvil = anvil.replace(" && env ", f" && echo $BASHPID > {tmp_path / 'anvil.pid'} && exec env ", 1)
    shell = f"( {anvil} ); echo EXIT=$? > {shlex.quote(str(status_file))}; sleep 60"
    with Pane("anvil-plain-signal", shell) as tmux:
        tmux.wait(lambda: (tmp_path / "anvil.pid").exists(), "anvil to start")
        tmux.wait_text("mode: auto")
        tmux.type("go")
        tmux.send("Enter")
        tmux.wait(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the command to start")
        command = int(pid_file.read_text())
        os.kill(int((tmp_path / "anvil.pid").read_text()), getattr(signal, f"SIG{signal_name}"))
        tmux.wait(status_file.exists, "anvil to exit", timeout=20)
        assert status_file.read_text().strip() == f"EXIT={code}"
        tmux.wait(lambda: not Path(f"/proc/{command}").exists() or "Z" in Path(f"/proc/{command}/stat").read_text()
                  .rsplit(")", 1)[1].split()[:1], "the command to end", timeout=10)

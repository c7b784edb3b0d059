"""End to end in a real terminal: tmux runs `anvil --plain` against the local scripted OpenAI-compatible server.

It types a prompt, approves the command with `y` and sees the file the command created; cycles the approval
mode with Shift+Tab; interrupts a streaming answer with Ctrl+C (read raw from the terminal while the turn
runs); and quits with Ctrl+D. The shell records the exit status. Skipped only when tmux is missing.
"""

from __future__ import annotations

import shlex
import shutil
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

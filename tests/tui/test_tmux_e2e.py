"""End to end in a real terminal: tmux runs `anvil` against the local scripted OpenAI-compatible server.

It types a prompt, approves the command with `y`, sees the file the command created, and quits with /exit;
the shell records the exit status. Skipped only when tmux is missing.
"""

from __future__ import annotations

import shlex
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import StartServer
from tests.support.tmux import Pane, anvil_shell

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TURNS = [
    {"text": "I'll create the file with a command.",
     "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hello from anvil > created.txt"}}]},
    {"text": "Created created.txt for you."},
]


def test_type_approve_see_the_file_and_exit(tmp_path: Path, project: Path, scripted_server: StartServer,
                                            isolated_env: Path) -> None:
    status_file = tmp_path / "exit-status"
    anvil = anvil_shell(project, isolated_env, "--model", "openai/scripted", "--api-base", scripted_server(TURNS))
    shell = f"{anvil}; echo $? > {shlex.quote(str(status_file))}"
    with Pane("anvil-e2e", shell) as tmux:
        tmux.wait_text("openai/scripted")  # the status bar: the app is up and the runtime ready
        tmux.type("please create the file")
        tmux.send("Enter")
        tmux.wait_text("Approve run_command?")
        assert not (project / "created.txt").exists()
        time.sleep(0.5)  # the modal ignores y for its first 0.3 s, against keys typed ahead
        tmux.send("y")
        tmux.wait(lambda: (project / "created.txt").exists(), "the file")
        assert (project / "created.txt").read_text() == "hello from anvil\n"
        tmux.wait_text("Created created.txt for you.")
        tmux.type("/exit")
        tmux.send("Enter")
        tmux.wait(status_file.exists, "anvil to exit", timeout=20)
        assert status_file.read_text().strip() == "0"

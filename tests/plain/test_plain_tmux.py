"""End to end in a real terminal: tmux runs `anvil --plain` against the local scripted OpenAI-compatible server.

It types a prompt, approves the command with `y` and sees the file the command created; cycles the approval
mode with Shift+Tab; interrupts a streaming answer with Ctrl+C (read raw from the terminal while the turn
runs); and quits with Ctrl+D. The shell records the exit status. Skipped only when tmux is missing.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, anvil_command

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

LONG = "This answer goes on and on. " * 120
TURNS = [
    {"text": "I'll create the file with a command.",
     "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hello from plain > made.txt"}}]},
    {"text": "Created made.txt for you."},
    {"text": LONG},
    {"text": "Still here after the interrupt."},
]


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def send(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def type(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)

    def screen(self) -> str:
        # -S -200: the scrollback too, since the plain REPL prints into it
        out = subprocess.run(["tmux", "capture-pane", "-p", "-S", "-200", "-t", self.name], capture_output=True,
                             text=True)
        return out.stdout

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{self.screen()}")

    def wait_text(self, text: str, timeout: float = 60.0) -> None:
        self.wait(lambda: text in self.screen(), repr(text), timeout)


@pytest.fixture
def scripted_server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "turns.json"
    script.write_text(json.dumps(TURNS))
    # 10 ms between chunks: the long answer streams for a few seconds, long enough to interrupt it
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "openai_server.py"), str(script),
                             "0.01"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_plain_repl_in_a_real_terminal(tmp_path: Path, project: Path, scripted_server: str,
                                       isolated_env: Path) -> None:
    status_file = tmp_path / "exit-status"
    command = " ".join(shlex.quote(part) for part in
                       anvil_command("--plain", "--model", "openai/scripted", "--api-base", scripted_server))
    env = (f"XDG_CONFIG_HOME={shlex.quote(str(isolated_env / 'config'))} "
           f"XDG_DATA_HOME={shlex.quote(str(isolated_env / 'data'))} PYTHONPATH={shlex.quote(str(REPO))}")
    shell = (f"cd {shlex.quote(str(project))} && env {env} {command}; "
             f"echo EXIT=$? > {shlex.quote(str(status_file))}; sleep 60")
    tmux = Tmux(f"anvil-plain-{uuid.uuid4().hex[:8]}")
    subprocess.run(["tmux", "new-session", "-d", "-s", tmux.name, "-x", "120", "-y", "40", shell], check=True)
    try:
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
    finally:
        subprocess.run(["tmux", "kill-session", "-t", tmux.name], capture_output=True)

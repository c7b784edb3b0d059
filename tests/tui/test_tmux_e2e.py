"""End to end in a real terminal: tmux runs `anvil` against the local scripted OpenAI-compatible server.

It types a prompt, approves the command with `y`, sees the file the command created, and quits with /exit;
the shell records the exit status. Skipped only when tmux is missing.
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

TURNS = [
    {"text": "I'll create the file with a command.",
     "tool_calls": [{"name": "run_command", "arguments": {"command": "echo hello from anvil > created.txt"}}]},
    {"text": "Created created.txt for you."},
]


class Tmux:
    """One session on a private tmux server (its own socket), so the test never touches anyone else's."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.socket = name

    def run(self, *args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=check).stdout

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", self.name, "-l", text)

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name, check=False)

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
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "support" / "openai_server.py"), str(script)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_type_approve_see_the_file_and_exit(tmp_path: Path, project: Path, scripted_server: str,
                                            isolated_env: Path) -> None:
    status_file = tmp_path / "exit-status"
    command = " ".join(shlex.quote(part) for part in
                       anvil_command("--model", "openai/scripted", "--api-base", scripted_server))
    env = (f"XDG_CONFIG_HOME={shlex.quote(str(isolated_env / 'config'))} "
           f"XDG_DATA_HOME={shlex.quote(str(isolated_env / 'data'))} PYTHONPATH={shlex.quote(str(REPO))}")
    shell = f"cd {shlex.quote(str(project))} && env {env} {command}; echo $? > {shlex.quote(str(status_file))}"
    tmux = Tmux(f"anvil-e2e-{uuid.uuid4().hex[:8]}")
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "120", "-y", "40", shell)
    try:
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
    finally:
        tmux.run("kill-server", check=False)

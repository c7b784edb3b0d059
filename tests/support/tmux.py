"""A tmux pane for end-to-end tests in a real terminal: start a shell command, type, read the screen, wait.

Each pane runs on its own tmux server (a private socket named after the session), so a test never sees or
kills anyone else's sessions, and closing the pane ends everything it started.
"""

from __future__ import annotations

import shlex
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from tests.conftest import REPO, anvil_command


def anvil_shell(project: Path, home: Path, *args: str) -> str:
    """A shell line that runs anvil in ``project`` with the test's config and data directories.

    tmux starts the command from its own server's environment, not the test's: the isolated directories
    and the checkout on PYTHONPATH have to be passed explicitly.
    """
    command = " ".join(shlex.quote(part) for part in anvil_command(*args))
    env = (f"XDG_CONFIG_HOME={shlex.quote(str(home / 'config'))} "
           f"XDG_DATA_HOME={shlex.quote(str(home / 'data'))} PYTHONPATH={shlex.quote(str(REPO))}")
    return f"cd {shlex.quote(str(project))} && env {env} {command}"


class Pane:
    """One tmux session running ``shell``; use it as a context manager so the session always ends.

    ``scrollback`` lines above the visible screen are part of ``screen()``: the plain REPL prints into the
    terminal's scrollback, while the full-screen app only ever draws the visible screen.
    """

    def __init__(self, prefix: str, shell: str, *, width: int = 120, height: int = 40, scrollback: int = 0) -> None:
        self.name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.socket = self.name
        self.scrollback = scrollback
        self.run("new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), shell)
        self.socket_path = Path(self.run("display-message", "-p", "#{socket_path}").strip())

    def __enter__(self) -> Pane:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.run("kill-server", check=False)
        self.socket_path.unlink(missing_ok=True)  # tmux leaves it behind; one per test run would pile up

    def run(self, *args: str, check: bool = True) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              check=check).stdout

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", self.name, "-l", text)

    def screen(self) -> str:
        history = ["-S", f"-{self.scrollback}"] if self.scrollback else []
        return self.run("capture-pane", "-p", *history, "-t", self.name, check=False)

    def wait(self, condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen shows:\n{self.screen()}")

    def wait_text(self, text: str, timeout: float = 60.0) -> None:
        self.wait(lambda: text in self.screen(), repr(text), timeout)

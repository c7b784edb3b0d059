"""Shared plumbing for the terminal benchmarks: a private tmux server, an isolated anvil environment, RSS.

Not a benchmark itself (run_all runs only ``bench_*.py``). Every wait here is bounded by a timeout, and
:class:`TmuxServer` kills its whole private server on exit, so a failed run leaves no session behind.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType

REPO = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 120, 40


class BenchError(RuntimeError):
    """Something the benchmark waited for did not happen in time; the message says what and shows the screen."""


class TmuxServer:
    """A private tmux server (its own socket): nothing here can touch a person's own tmux sessions.

    A keeper session lives for the whole run, so measured sessions never pay for a server start and ending
    one never races the server shutting down.
    """

    def __init__(self) -> None:
        self.socket = f"anvil-bench-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.socket_path = ""

    def __enter__(self) -> TmuxServer:
        self.run("new-session", "-d", "-s", "keeper", "sleep 86400")
        self.socket_path = self.run("display-message", "-p", "-t", "keeper", "#{socket_path}").strip()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.run("kill-server", check=False)
        if self.socket_path:  # tmux 3.3 leaves the socket file behind after kill-server
            with contextlib.suppress(OSError):
                Path(self.socket_path).unlink()

    def run(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=check,
                                timeout=20)
        return result.stdout

    @contextlib.contextmanager
    def session(self, argv: list[str], cwd: Path, env: dict[str, str]) -> Iterator[Pane]:
        """Run ``argv`` in a fresh session; the pane's process is ``argv`` itself (``exec``), so its pid is ours."""
        name = f"bench-{uuid.uuid4().hex[:8]}"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        command = " ".join(shlex.quote(part) for part in argv)
        pane = Pane(self, name)
        pane.started = time.perf_counter()
        self.run("new-session", "-d", "-s", name, "-x", str(WIDTH), "-y", str(HEIGHT),
                 f"cd {shlex.quote(str(cwd))} && exec env -i {exports} {command}")
        try:
            yield pane
        finally:
            self.run("kill-session", "-t", name, check=False)


class Pane:
    def __init__(self, server: TmuxServer, name: str) -> None:
        self.server = server
        self.name = name
        self.started = 0.0  # perf_counter just before `tmux new-session`

    def screen(self) -> str:
        return self.server.run("capture-pane", "-p", "-t", self.name, check=False)

    def keys(self, *keys: str) -> None:
        self.server.run("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.server.run("send-keys", "-t", self.name, "-l", text)

    def pid(self) -> int:
        return int(self.server.run("display-message", "-p", "-t", self.name, "#{pane_pid}").strip())

    def wait(self, condition: Callable[[str], bool], what: str, timeout: float = 30.0) -> tuple[float, str]:
        """Poll capture-pane (about 2 ms a poll) until ``condition(screen)``; returns (perf_counter, screen)."""
        deadline = time.perf_counter() + timeout
        screen = ""
        while time.perf_counter() < deadline:
            screen = self.screen()
            if condition(screen):
                return time.perf_counter(), screen
        raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}; the screen shows:\n{screen}")

    def wait_text(self, text: str, timeout: float = 30.0) -> float:
        return self.wait(lambda screen: text in screen, repr(text), timeout)[0]

    def first_paint(self, timeout: float = 30.0) -> float:
        """Seconds from ``tmux new-session`` to the first visible text (tmux's start-up included)."""
        return self.wait(lambda screen: bool(screen.strip()), "the first paint", timeout)[0] - self.started


@contextlib.contextmanager
def anvil_env(prefix: str) -> Iterator[tuple[Path, dict[str, str]]]:
    """A temporary project directory and an environment whose XDG directories point into the same temp dir."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        base = Path(tmp)
        project = base / "project"
        project.mkdir()
        env = {"XDG_CONFIG_HOME": str(base / "config"), "XDG_DATA_HOME": str(base / "data"),
               "HOME": str(base), "TERM": "xterm-256color", "PATH": os.environ.get("PATH", ""),
               "LANG": "C.UTF-8", "PYTHONPATH": str(REPO)}
        yield project, env


def anvil_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "anvil.cli", *args]


BARE_APP = '''
from textual.app import App
from textual.widgets import Input, Static


class Bare(App):
    def compose(self):
        yield Static("anvil")
        yield Input()

    def on_mount(self):
        self.query_one(Input).focus()


Bare().run()
'''


def bare_app_argv(directory: Path) -> list[str]:
    """The reference app of DESIGN.md: a bare Textual app with one Static and one (focused) Input."""
    path = directory / "bare_app.py"
    path.write_text(BARE_APP)
    return [sys.executable, str(path)]


def rss_mb(pid: int) -> float:
    """Resident memory of a process (VmRSS), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def have_tmux() -> bool:
    if shutil.which("tmux") is None:
        print("tmux is not installed: nothing measured")
        return False
    return True


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else float("nan")


def p95_ms(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000 if ordered else float("nan")


def ratio(value: float, reference: float) -> str:
    return f"{value / reference:5.2f}x" if reference > 0 else "  n/a"

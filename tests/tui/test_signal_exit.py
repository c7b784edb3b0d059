"""The pieces of ending on SIGTERM and SIGHUP, each against the fault it answers: a terminal that hung up (a real
pseudo-terminal whose other side is closed), and an event loop that never gets to the exit (a process that
ignores it). The whole, in a real terminal many times, is in test_signal_exit_tmux.py."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread

from anvil.frontend.signal_exit import EXIT_DEADLINE
from anvil.tui.terminal_driver import AnvilDriver, _Output, terminal_gone
from tests.conftest import REPO


@pytest.fixture
def hung_up() -> Iterator[int]:
    """The terminal side of a pseudo-terminal whose other side closed: what a closed window leaves anvil."""
    controller, terminal = pty.openpty()
    os.close(controller)
    yield terminal
    os.close(terminal)


def writes_get_through(writer: WriterThread, count: int, within: float = 2.0) -> bool:
    def write_all() -> None:
        for n in range(count):
            writer.write(f"frame {n}\n")
        writer.stop()

    done = threading.Thread(target=write_all, daemon=True)
    done.start()
    done.join(within)
    return not done.is_alive()


def first_frame(writer: WriterThread) -> WriterThread:
    """The writer started, after its first frame: written and flushed (on a quiet queue, at once)."""
    writer.start()
    writer.write("first frame\n")
    time.sleep(0.3)
    return writer


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # Textual's thread dying: the fault
def test_output_to_a_hung_up_terminal_is_dropped_and_the_writer_keeps_going(hung_up: int) -> None:
    # The fault: EIO ends Textual's writer thread at its first flush, and its bounded queue then blocks for good.
    textual_own = first_frame(WriterThread(os.fdopen(os.dup(hung_up), "w")))
    assert not textual_own.is_alive()
    assert not writes_get_through(textual_own, MAX_QUEUED_WRITES + 1, within=1.0)
    ours = first_frame(WriterThread(_Output(os.fdopen(os.dup(hung_up), "w"))))  # type: ignore[arg-type]
    assert ours.is_alive()
    assert writes_get_through(ours, 10 * MAX_QUEUED_WRITES)


def test_the_sigcont_of_a_hangup_restarts_nothing(hung_up: int) -> None:
    controller, live = pty.openpty()
    try:
        assert terminal_gone(hung_up) and not terminal_gone(live)
        for fd, restarts in ((hung_up, 0), (live, 1)):
            driver: Any = AnvilDriver.__new__(AnvilDriver)  # not started: no handlers, no threads
            driver.fileno, driver._auto_restart = fd, True
            calls: list[int] = []
            driver.resume_application_mode = lambda calls=calls: calls.append(1)
            driver._sigcont_application(signal.SIGCONT, None)
            assert len(calls) == restarts
    finally:
        os.close(controller)
        os.close(live)


STUCK_APP = """
import os, signal, sys, time
from pathlib import Path
from anvil.frontend.signal_exit import SignalExit

marker = Path(sys.argv[1])
# an app whose event loop never runs what it is asked (it is stuck): only the deadline can end it
watcher = SignalExit(lambda signum: None, lambda: marker.write_text("flushed"), lambda *args: None)
assert watcher.install()
print("ready", flush=True)
while True:
    time.sleep(0.05)  # the main thread keeps busy; its Python signal handler does nothing
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stuck_app_still_ends_by_the_deadline_having_flushed(signum: int, tmp_path: Path) -> None:
    script, marker = tmp_path / "stuck.py", tmp_path / "flushed"
    script.write_text(textwrap.dedent(STUCK_APP))
    app = subprocess.Popen([sys.executable, str(script), str(marker)], stdout=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO)})
    assert app.stdout is not None and app.stdout.readline().strip() == "ready"
    started = time.monotonic()
    app.send_signal(signum)
    app.send_signal(signum)  # a second signal changes nothing
    code = app.wait(timeout=10)
    took = time.monotonic() - started
    assert code == 128 + signum and marker.read_text() == "flushed"
    assert EXIT_DEADLINE <= took < 2.0

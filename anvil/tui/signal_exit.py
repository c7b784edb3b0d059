"""SIGTERM and SIGHUP end the app within :data:`EXIT_DEADLINE` seconds, with the session flushed, whatever hangs.

The signals are watched by a thread of their own, not by the event loop: Python's signal handler writes the
signal's number to a pipe (``signal.set_wakeup_fd``) from the C level, so the thread hears it even when the loop
is stuck (as it was in Textual's writer queue: see :mod:`anvil.tui.terminal_driver`). The thread asks the app to
close the way /exit does (the turn interrupted, hooks and MCP servers and commands ended, the session closed),
and the process then ends without Python's finalisation, which takes over a second with litellm and Textual
loaded. If that has not happened by the deadline, the thread ends the process itself: what the session holds is
written, the commands anvil started are killed, the terminal is given back its settings where it still exists.

A second signal changes nothing: the first one's deadline stands.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

#: seconds from SIGTERM or SIGHUP to the end of the process, at the latest
EXIT_DEADLINE = 1.5
WATCHED = (signal.SIGTERM, signal.SIGHUP)
#: what a terminal needs back if anvil ends without Textual's own clean-up: the main screen, the cursor, no mouse
_TERMINAL_RESET = "\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l\x1b[?2004l\x1b[?1049l\x1b[?25h\x1b[?7h"


def exit_code(signum: int) -> int:
    """What a shell reports for a process a signal ended: 128 + the signal's number."""
    return 128 + signum


class SignalExit:
    """Installed once the app runs; ``request_exit(signum)`` runs on the event loop, ``close_now()`` on this
    thread when the deadline passes, ``terminal_settings`` (termios attributes, or None) restores the tty."""

    def __init__(self, request_exit: Callable[[int], None], close_now: Callable[[], None],
                 call_soon: Callable[..., Any], terminal_settings: Callable[[], Any] = lambda: None) -> None:
        self._request_exit = request_exit
        self._close_now = close_now
        self._call_soon = call_soon
        self._terminal_settings = terminal_settings
        self.signum: int | None = None
        self.finished = threading.Event()  # set when the process is about to end by itself
        self._read_fd = self._write_fd = -1
        self._previous: dict[int, Any] = {}
        self._previous_wakeup = -1

    def install(self) -> bool:
        """Watch the signals (from the main thread only); False where that is not possible."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._write_fd, False)  # the C handler must never block
        try:
            self._previous_wakeup = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
            for signum in WATCHED:
                self._previous[signum] = signal.signal(signum, _noted)
        except (ValueError, OSError):
            self.uninstall()
            return False
        threading.Thread(target=self._watch, name="anvil-signal-exit", daemon=True).start()
        return True

    def uninstall(self) -> None:
        """Back to how signals were (after a normal exit); the watching thread ends."""
        for signum, handler in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self._previous.clear()
        if self._write_fd >= 0:
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(self._previous_wakeup)
            os.close(self._write_fd)  # the thread reads the end of the pipe and stops
            self._write_fd = -1

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except OSError:
                return
            if not data:
                os.close(self._read_fd)
                return
            wanted = [signum for signum in data if signum in WATCHED]  # the pipe also hears SIGWINCH and others
            if wanted and self.signum is None:
                self.signum = wanted[0]
                self._end(wanted[0])
                return

    def _end(self, signum: int) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed already: the app is ending anyway
            self._call_soon(self._request_exit, signum)
        if self.finished.wait(EXIT_DEADLINE):
            return  # the app closed in time; the main thread ends the process
        with contextlib.suppress(Exception):  # nothing may keep the process from ending now
            self._close_now()
        self._restore_terminal()
        flush_and_end(exit_code(signum))

    def _restore_terminal(self) -> None:
        """Best effort, in a thread of its own: a terminal that takes no output must not hold the exit."""
        def restore() -> None:
            settings = self._terminal_settings()
            with contextlib.suppress(Exception):
                import termios

                if settings is not None:
                    termios.tcsetattr(sys.__stdin__.fileno(), termios.TCSANOW, settings)  # type: ignore[union-attr]
                os.write(sys.__stderr__.fileno(), _TERMINAL_RESET.encode())  # type: ignore[union-attr]

        writer = threading.Thread(target=restore, name="anvil-terminal-reset", daemon=True)
        writer.start()
        writer.join(0.2)


def _noted(signum: int, frame: Any) -> None:
    """The Python-level handler: nothing to do here (the pipe carries the signal to the watching thread), but
    without a handler of Python's the signal would end the process at once, unflushed."""


def flush_and_end(code: int) -> None:
    """End the process now, without Python's finalisation: stdout and stderr are flushed first."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    os._exit(code)

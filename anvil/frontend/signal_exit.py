"""SIGTERM and SIGHUP end anvil within :data:`EXIT_DEADLINE` seconds, with the session flushed, whatever hangs.

:class:`SignalExit` is the app's (below); :class:`EndOnSignal` is for ``-p`` and the plain REPL.

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
from collections.abc import Callable, Iterator
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


class EndOnSignal:
    """SIGTERM and SIGHUP for the front ends that own no terminal to hang on (``-p``, the plain REPL).

    A Python-level handler (it runs in the main thread, and a signal wakes the event loop's wait) notes the
    first signal, asks the loop to interrupt the turn (``on_signal``, run there), and starts a timer thread. The
    front end writes what it has (the turn's end, the result line) and calls :meth:`end`, which ends the process
    with 128 + the signal. If that has not happened within :data:`EXIT_DEADLINE` seconds, the timer ends the
    process itself after ``close_now`` (commands killed, the session's records written). A second signal changes
    nothing. Without a signal, :meth:`end` does nothing and the handlers go back to what they were on leaving.
    """

    def __init__(self, call_soon: Callable[..., Any], on_signal: Callable[[int], None],
                 close_now: Callable[[], None]) -> None:
        self._call_soon = call_soon
        self._on_signal = [on_signal]
        self._close_now = close_now
        self.signum: int | None = None
        self.finished = threading.Event()
        self._previous: dict[int, Any] = {}
        self._terminal: Any = None

    def also(self, callback: Callable[[int], None]) -> None:
        """Another thing to do on the loop when the signal comes (stop reading the next message, say)."""
        self._on_signal.append(callback)

    def __enter__(self) -> EndOnSignal:
        self._terminal = _terminal_settings()
        if threading.current_thread() is threading.main_thread():
            with contextlib.suppress(ValueError, OSError):
                for signum in WATCHED:
                    self._previous[signum] = signal.signal(signum, self._heard)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.signum is not None:
            return  # ending: the handlers stay, so that a second signal is as harmless as the first said
        for signum, handler in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)

    def end(self) -> None:
        """The front end has written what it had: when a signal came, the process ends now with its code."""
        if self.signum is not None:
            self.finished.set()
            flush_and_end(exit_code(self.signum))

    def _heard(self, signum: int, _frame: Any) -> None:
        if self.signum is not None:
            return
        self.signum = signum
        threading.Thread(target=self._backstop, name="anvil-signal-deadline", daemon=True).start()
        for callback in self._on_signal:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the front end is ending anyway
                self._call_soon(callback, signum)

    def _backstop(self) -> None:
        if self.finished.wait(EXIT_DEADLINE):
            return
        with contextlib.suppress(Exception):  # nothing may keep the process from ending now
            self._close_now()
        if self._terminal is not None:  # the plain REPL may have been reading keys raw
            with contextlib.suppress(Exception):
                import termios

                termios.tcsetattr(0, termios.TCSANOW, self._terminal)
        flush_and_end(exit_code(self.signum or signal.SIGTERM))


def _terminal_settings() -> Any:
    """stdin's terminal attributes, or None when it is no terminal."""
    try:
        import termios

        return termios.tcgetattr(0) if os.isatty(0) else None
    except Exception:
        return None


@contextlib.contextmanager
def interrupt_on_sigint(interrupt: Callable[[], None], quit_code: int) -> Iterator[None]:
    """Ctrl+C (SIGINT) interrupts the turn; a second one quits at once with ``quit_code``. On the running loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    presses = 0

    def on_sigint() -> None:
        nonlocal presses
        presses += 1
        interrupt()
        if presses > 1:  # the person really wants out
            raise SystemExit(quit_code)

    with contextlib.suppress(NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.remove_signal_handler(signal.SIGINT)

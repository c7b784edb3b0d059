"""Textual's Linux driver, made safe for a terminal that goes away while the app runs.

When a terminal hangs up (its window closed, ``tmux kill-server``, an ssh connection lost), the kernel sends the
session leader SIGHUP and then SIGCONT. Textual answers SIGCONT by starting its application mode again (it
takes it for the end of a Ctrl+Z), and on a hung-up terminal its check for that fails open (``isatty`` is false
there): a second writer thread starts. Writing to the dead terminal fails with EIO, which ends that thread, and
the app goes on queueing output for it; its queue holds 30 writes, so the next write after those, or the
``stop`` at shutdown, blocks the event loop for good, and with it every signal handler run on the loop. That is
the hang of issue 16 (a stack dump showed the main thread in ``WriterThread.stop`` and the first writer idle).

So here: SIGCONT on a terminal that has hung up restarts nothing; output that cannot be written is dropped (the
writer thread keeps draining its queue); and closing waits for the writer a bounded time.
"""

from __future__ import annotations

import contextlib
import sys
import termios
import threading
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

#: seconds closing waits for the output thread to finish writing
CLOSE_TIMEOUT = 0.5


def terminal_gone(fd: int) -> bool:
    """The terminal on ``fd`` has hung up (or was never one): its attributes cannot be read."""
    try:
        termios.tcgetattr(fd)
    except (termios.error, OSError, ValueError):
        return True
    return False


class _Output:
    """The terminal's output for Textual's writer thread: what cannot be written is dropped, not raised, so the
    thread lives on and keeps its queue moving."""

    def __init__(self, file: IO[str]) -> None:
        self._file = file

    def write(self, text: str) -> int:
        try:
            return self._file.write(text)
        except (OSError, ValueError):
            return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._file.flush()

    def fileno(self) -> int:
        return self._file.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class AnvilDriver(LinuxDriver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._file = _Output(sys.__stderr__)  # type: ignore[arg-type]

    def _sigcont_application(self, *args: Any) -> None:
        if terminal_gone(self.fileno):  # the SIGCONT of a hangup, not the end of a Ctrl+Z
            return
        super()._sigcont_application(*args)

    def close(self) -> None:
        writer = self._writer_thread
        if writer is None:
            return
        stopping = threading.Thread(target=writer.stop, name="anvil-output-stop", daemon=True)
        stopping.start()
        stopping.join(CLOSE_TIMEOUT)  # a terminal that takes no output must not keep anvil from ending

"""Handing a run to the warm engine and relaying its signals (:mod:`anvil.engine.client` decides whether to).

Standard library only, imported only when the engine is on: ``anvil --version`` and a run with the engine off
never pay for the socket and signal machinery.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from typing import Any

from anvil.engine import paths, wire
from anvil.engine.reach import PROTOCOL, connect, say, start_in_background

#: signals passed on to the run's process, as the terminal or a parent would have sent them to a fresh anvil
RELAYED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH, signal.SIGUSR1,
           signal.SIGUSR2, signal.SIGCONT)
#: limits a run gets from the shell that started it (the engine's may differ: it was started by another run)
RLIMITS = ("RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_CORE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK",
           "RLIMIT_FSIZE", "RLIMIT_CPU")


def run_in_engine(args: list[str]) -> int | None:
    """The run's exit code once the engine has run it; None when it did not start it (the caller runs it)."""
    if not in_the_foreground():  # a run sent to the background stays under the terminal's job control, here
        return None
    path = paths.socket_path()
    if not os.path.lexists(path):  # no engine yet: this run goes on here, the next one gets one
        start_in_background()
        return None
    try:
        paths.check_private(path.parent, want_dir=True)
        paths.check_private(path, want_dir=False)
    except paths.EngineUnsafe as exc:
        say(f"not using the engine: {exc}. Remove {path} (or run `anvil engine stop`) to clear it.")
        return None
    conn = connect(path)
    if conn is None:
        start_in_background()
        return None
    with conn:
        return _run(conn, args)


def request(args: list[str]) -> dict[str, Any]:
    import resource

    limits = {}
    for name in RLIMITS:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            limits[name] = list(resource.getrlimit(getattr(resource, name)))
    umask = os.umask(0)
    os.umask(umask)
    stdio = {name: [getattr(stream, "encoding", None) or "utf-8", getattr(stream, "errors", None) or "strict"]
             for name, stream in (("stdin", sys.stdin), ("stdout", sys.stdout), ("stderr", sys.stderr))}
    return {"protocol": PROTOCOL, "kind": "run", "argv": args, "argv0": sys.argv[0] if sys.argv else "anvil",
            "cwd": os.getcwd(), "env": dict(os.environ), "umask": umask, "stdio": stdio, "rlimits": limits}


def _run(conn: socket.socket, args: list[str]) -> int | None:
    proof = open_proof(conn)
    if proof is None:  # this process may not read the engine's: it is confined, and so must its run be
        return None
    relay = Relay()  # from before the request: a signal that comes meanwhile is for the run
    try:
        fds = [_fd_or_devnull(number) for number in range(3)]
        wire.send(conn, request(args), [*fds, proof])
        reply, _ = wire.receive(conn)
    except (OSError, wire.WireError):
        reply = {}
    finally:
        os.close(proof)
    if "pid" not in reply:
        relay.give_back()
        if reply.get("refused") == "stale":
            start_in_background()
        return None
    conn.settimeout(None)
    relay.attach(int(reply["pid"]))
    return relay.wait(conn)


def in_the_foreground() -> bool:
    """False when stdin is a terminal whose foreground is another process group (``anvil &``): such a process is
    stopped by the terminal when it reads or sets it up, which the engine's child, outside the terminal's session,
    would not be."""
    if not os.isatty(0):
        return True
    try:
        return os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return True


def open_proof(conn: socket.socket) -> int | None:
    """The engine's ``/proc/<pid>/environ``, opened here: the engine serves only a client that can (see
    :func:`anvil.engine.peer.unproven`). None when this process cannot: a Landlock domain or another confinement."""
    pid, _uid = wire.peer_ids(conn)
    if pid <= 0:
        return None
    try:
        return os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _fd_or_devnull(number: int) -> int:
    """Descriptor ``number`` when it is open, else /dev/null (a run started with a closed stdin)."""
    try:
        os.fstat(number)
        return number
    except OSError:
        return os.open(os.devnull, os.O_RDWR)


class Relay:
    """Passes signals on to the run's process (held until its pid is known) and waits for its exit code."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []
        self.fatal: int | None = None
        self.terminal = _terminal_state()
        for number in RELAYED:
            signal.signal(number, self._relay)
        signal.signal(signal.SIGTSTP, self._stop)

    def attach(self, pid: int) -> None:
        self.pid = pid
        for number in self.pending:
            self._send(number)
        self.pending.clear()

    def give_back(self) -> None:
        """The run will not be the engine's: default handlers again, and the signals held are this process's."""
        self._restore()
        for number in self.pending:
            os.kill(os.getpid(), number)

    def wait(self, conn: socket.socket) -> int:
        try:
            while True:
                try:
                    message, _ = wire.receive(conn)
                except (OSError, wire.WireError):
                    return self._ended_without_code()
                if "exit" in message:
                    return int(message["exit"])
        finally:
            self._restore()

    def _restore(self) -> None:
        for number in (*RELAYED, signal.SIGTSTP):
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)

    def _relay(self, number: int, _frame: Any) -> None:
        if number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            self.fatal = self.fatal or number
        if self.pid is None:
            self.pending.append(number)
        else:
            self._send(number)

    def _send(self, number: int) -> None:
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, number)

    def _stop(self, _number: int, _frame: Any) -> None:
        """Ctrl+Z: the run stops with this process, and goes on with it (``fg`` sends SIGCONT, relayed)."""
        if self.pid is not None:
            self._send(signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, self._stop)

    def _ended_without_code(self) -> int:
        if self.terminal is not None:  # a full-screen run killed mid-way leaves the terminal raw
            import termios

            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(0, termios.TCSANOW, self.terminal)
        if self.fatal is not None:
            return 128 + self.fatal
        say(f"the run ended without an exit status; the engine's log is {paths.engine_dir() / 'engine.log'}")
        return 1


def _terminal_state() -> Any:
    if not os.isatty(0):
        return None
    import termios

    try:
        return termios.tcgetattr(0)
    except termios.error:
        return None

"""The forked child: becomes the run the client asked for, then runs ``anvil.cli.main`` as a fresh process would.

What a fresh process takes from where it was started is taken from the request: standard streams (the
client's own descriptors: its terminal or pipes), working directory, the whole environment, umask, arguments,
stdio encodings, locale and time zone. Signal dispositions go back to Python's defaults. Nothing the engine
did before the fork (only imports) knows anything of any run.

The client relays signals to this process; if the client goes away (killed, its terminal closed), this
process gets SIGHUP, as it would have as the client's own process.
"""

from __future__ import annotations

import contextlib
import io
import locale
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from typing import Any

from anvil.engine import wire

#: signals the engine changed; the child gives them back their defaults
_ENGINE_SIGNALS = (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGUSR1)


def become(request: dict[str, Any], fds: list[int]) -> None:
    """Take over the client's streams, directory and environment (in the forked child, before any anvil code)."""
    for number, fd in enumerate(fds[:3]):
        os.dup2(fd, number)  # dup2 clears close-on-exec: the run's commands inherit these, as they would
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.umask(int(request["umask"]))
    _limits(request.get("rlimits") or {})
    time.tzset()
    with contextlib.suppress(locale.Error):
        locale.setlocale(locale.LC_CTYPE, "")
    tempfile.tempdir = None  # recomputed from this run's TMPDIR
    sys.argv = [str(request.get("argv0") or "anvil"), *request["argv"]]
    _new_stdio(request.get("stdio") or {})
    for number in _ENGINE_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _limits(limits: dict[str, list[int]]) -> None:
    """The client's resource limits, as far as the engine's allow (a limit can be lowered, not raised)."""
    import resource

    for name, (soft, hard) in limits.items():
        with contextlib.suppress(AttributeError, OSError, ValueError):
            resource.setrlimit(getattr(resource, name), (soft, hard))


def _new_stdio(encodings: dict[str, list[str]]) -> None:
    """sys.stdin/stdout/stderr (and their ``__dunder__`` twins, which Textual uses) on descriptors 0-2, with the
    client's encodings, buffered as Python buffers them for a fresh process."""
    def stream(fd: int, name: str, default_errors: str) -> io.TextIOWrapper:
        encoding, errors = (encodings.get(name) or ["utf-8", default_errors])[:2]
        tty = os.isatty(fd)
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding, errors=errors,  # type: ignore[arg-type]
                                line_buffering=tty or fd == 2, write_through=fd == 2)

    for old in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            old.flush()
    sys.stdin = sys.__stdin__ = stream(0, "stdin", "strict")
    sys.stdout = sys.__stdout__ = stream(1, "stdout", "strict")
    sys.stderr = sys.__stderr__ = stream(2, "stderr", "backslashreplace")


def watch_client(conn: socket.socket) -> None:
    """SIGHUP to this process when the client's end of the connection closes (the client is gone)."""
    def wait() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass
        os.kill(os.getpid(), signal.SIGHUP)

    threading.Thread(target=wait, name="anvil-engine-client", daemon=True).start()


def run(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> int:
    """The whole life of the child; returns the exit code (the caller ``os._exit``\\s with it)."""
    try:
        become(request, fds)
        os.setpgid(0, 0)  # its own process group: the engine's signals are not its, nor the other way round
        wire.send(conn, {"pid": os.getpid()})
        watch_client(conn)
        code = _main(request["argv"])
    except BaseException:  # nothing may escape a forked child: it would run the engine's loop
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    for out in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            out.flush()
    with contextlib.suppress(OSError):
        wire.send(conn, {"exit": code})
    return code


def _main(argv: list[str]) -> int:
    from anvil.cli import main

    try:
        return int(main(argv) or 0)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return int(exc.code or 0)
        print(exc.code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130

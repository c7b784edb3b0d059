"""Finding the engine and starting it: standard library only (the client imports this on every run)."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

from anvil.engine import paths, wire

#: the version of the messages between ``anvil`` and its engine (:mod:`anvil.engine.wire`)
PROTOCOL = 1
CONNECT_TIMEOUT = 5.0
_STARTED: list[Any] = []


def connect(path: Path) -> socket.socket | None:
    """A connection to the engine at ``path``, checked to be served by this user; None when there is none."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    try:
        conn.connect(str(path))
        if wire.peer_uid(conn) != os.getuid():
            raise OSError("the engine's socket is served by another user")
    except OSError:
        conn.close()
        return None
    return conn


def start_in_background(*, wait: float = 0.0) -> bool:
    """Start an engine for the next run (not under CI). With ``wait``, wait that many seconds for it to be ready;
    True when it is. Never raises: a run goes on without an engine."""
    if os.environ.get("CI") and not wait:
        return False
    try:
        return _start(wait)
    except Exception as exc:
        say(f"could not start the engine ({exc}); this run goes on without it")
        return False


def _start(wait: float) -> bool:
    import subprocess
    import time

    path = paths.socket_path()
    try:
        paths.make_private_dir(path.parent)
    except (OSError, paths.EngineUnsafe):
        return False
    with open(path.parent / "engine.log", "ab") as log:
        os.chmod(log.name, 0o600)
        # kept in _STARTED: a Popen collected while its process runs warns
        process = subprocess.Popen([sys.executable, "-P", "-m", "anvil.engine.server", str(path)],
                                   cwd=path.parent, env=paths.engine_environment(), stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    _STARTED.append(process)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        conn = connect(path)
        if conn is not None:
            conn.close()
            return True
        if process.poll() is not None and process.returncode != 0:
            return False
        time.sleep(0.02)
    return False


def say(message: str) -> None:
    print(f"anvil: {message}", file=sys.stderr)

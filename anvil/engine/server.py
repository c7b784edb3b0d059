"""The engine process: import and warm up once, then fork a child for each run a client sends.

Run as ``python -m anvil.engine.server`` by the client (detached, in its own session, with an environment
that holds no keys: :func:`anvil.engine.paths.engine_environment`). One engine per socket: a second one started
at the same time finds the lock taken and leaves. It listens only once warm, so a client that can connect is
served at once. It serves only its own user (the kernel's peer credentials are checked on every connection)
and only processes in its own context (namespaces, credentials, capabilities, seccomp, cgroups:
:mod:`anvil.engine.peer`), and never runs anything of a run itself: each run is a forked child
(:mod:`anvil.engine.child`).

It stops by itself after :data:`IDLE_SECONDS` without a run, when anvil's files change under it (an upgrade,
an edit in a development checkout: a run is never served by stale code), on ``anvil engine stop`` and on
SIGTERM. Runs already forked go on: they are separate processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import selectors
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from anvil.engine import paths, peer, wire
from anvil.engine.reach import PROTOCOL
from anvil.engine.warm import warm_up

#: an engine nobody used for this long exits (its memory is the person's)
IDLE_SECONDS = 15 * 60
#: seconds a new engine waits for the lock held by one that is going away
LOCK_WAIT = 3.0


class Engine:
    def __init__(self, socket_path: Path, idle_seconds: float = IDLE_SECONDS) -> None:
        self.socket_path = socket_path
        self.idle_seconds = idle_seconds
        self.started = time.time()
        self.last_used = time.monotonic()
        self.served = 0
        self.stopping = False
        self.listener: socket.socket | None = None
        self.lock_fd = -1
        self.fingerprint: dict[str, float] = {}

    def lock(self, wait: float = LOCK_WAIT) -> bool:
        """Take the engine's lock; False when another engine holds it for ``wait`` seconds (that one serves; one
        that found its files changed lets go at once, so its successor waits for it)."""
        self.lock_fd = os.open(self.socket_path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)

    def listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # we hold the lock: whatever is here is left from an engine that died
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(self.socket_path))
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, 0o600)
        listener.listen(16)
        listener.setblocking(False)
        self.listener = listener

    def serve(self) -> None:
        """Accept runs until idle, stale or stopped."""
        assert self.listener is not None
        self.fingerprint = source_fingerprint()
        wakeup_r, wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # woken to reap
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the terminal that started it may go away
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        selector.register(wakeup_r, selectors.EVENT_READ)
        while not self.stopping:
            remaining = self.idle_seconds - (time.monotonic() - self.last_used)
            if remaining <= 0:
                break
            for key, _ in selector.select(timeout=min(remaining, 60)):
                if key.fileobj is wakeup_r:
                    with contextlib.suppress(OSError):
                        os.read(wakeup_r, 4096)
                else:
                    self._accept()
            _reap()
        self.close()

    def _accept(self) -> None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        fds: list[int] = []
        try:
            conn.setblocking(True)
            conn.settimeout(10)
            pid, uid, _gid = peer.peer_credentials(conn)
            if uid != os.getuid():
                return  # another user: not a word, not a fork
            request, fds = wire.receive(conn, with_fds=True)
            conn.settimeout(None)
            self.last_used = time.monotonic()
            refused = peer.refusal(conn) or peer.unproven(fds) if request.get("kind") == "run" else None
            if refused is not None:
                print(f"anvil engine: refused a run from pid {pid}: {refused}", file=sys.stderr, flush=True)
                wire.send(conn, {"refused": "context", "reason": refused})
                return
            if request.get("kind") == "run":
                request["rlimits"] = peer.limits(pid)  # the kernel's word, not the client's
            self._handle(conn, request, fds)
        except (OSError, wire.WireError):
            pass
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    def _handle(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        kind = request.get("kind")
        if request.get("protocol") != PROTOCOL:
            wire.send(conn, {"refused": "the engine speaks another protocol"})
        elif kind == "status":
            wire.send(conn, self.status())
        elif kind == "stop":
            wire.send(conn, {"stopped": os.getpid()})
            self.stopping = True
        elif kind != "run" or len(fds) != 4:
            wire.send(conn, {"refused": "not a run"})
        elif source_fingerprint() != self.fingerprint:
            wire.send(conn, {"refused": "stale", "reason": "anvil's files changed since the engine started"})
            self.stopping = True
        else:
            self.served += 1
            self._fork(conn, request, fds)

    def _fork(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        pid = os.fork()
        if pid:
            return
        # The child: nothing of the engine's own may stay open in it (the lock would outlive the engine).
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            assert self.listener is not None
            self.listener.close()
            os.close(self.lock_fd)
            from anvil.engine.child import run

            code = run(conn, request, fds)
        finally:
            os._exit(code)

    def status(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "started": self.started, "served": self.served,
                "idle_exit_in": round(self.idle_seconds - (time.monotonic() - self.last_used)),
                "socket": str(self.socket_path), "rss_mb": _rss_mb()}

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()
            self.listener = None


def source_fingerprint() -> dict[str, float]:
    """Modification times of anvil's source files and of the directories packages are installed in: any change
    means the engine would serve code the run would not have run (an upgrade, an edit in a checkout)."""
    package = Path(__file__).resolve().parent.parent
    stamps: dict[str, float] = {}
    for directory, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith((".py", ".tcss", ".toml", ".md", ".json")):
                path = os.path.join(directory, name)
                with contextlib.suppress(OSError):
                    stamps[path] = os.stat(path).st_mtime
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            stamps[entry] = os.stat(entry).st_mtime
    return stamps


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return


def _rss_mb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def main(argv: list[str]) -> int:
    socket_path = Path(argv[0])
    idle = float(argv[1]) if len(argv) > 1 else IDLE_SECONDS
    paths.make_private_dir(socket_path.parent)
    engine = Engine(socket_path, idle)
    if not engine.lock():
        return 0
    warm_up()
    if threading.active_count() != 1:  # a fork copies one thread: one that held a lock would deadlock a child
        print(f"anvil engine: the warm-up left threads running ({threading.enumerate()}); not serving",
              file=sys.stderr)
        return 1
    gc.collect()
    gc.freeze()  # what the warm-up loaded is never collected: children do not touch (and copy) its pages
    engine.listen()
    print(f"anvil engine {os.getpid()} serving on {socket_path}", file=sys.stderr, flush=True)
    engine.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Run inside the sandbox, before the command: ``python forwarder.py SOCKET -- COMMAND...``.

Listens on ``127.0.0.1:3128`` in the sandbox's own network namespace, then forks: the child passes every
connection to anvil's proxy over the unix socket ``SOCKET``; the parent becomes ``COMMAND`` (exec), so the
command's exit status and signals stay its own. The child ends with the sandbox's pid namespace.
Standard library only, and run with ``python -I -S``: it must start fast and trust nothing in the project.
"""

import contextlib
import os
import selectors
import signal
import socket
import sys

PORT = 3128


def _pipe(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        return
    pair = {client: upstream, upstream: client}
    selector = selectors.DefaultSelector()
    for sock in pair:
        selector.register(sock, selectors.EVENT_READ)
    open_ends = 2
    while open_ends:
        for key, _ in selector.select():
            sock = key.fileobj
            data = sock.recv(65536)  # type: ignore[union-attr]
            if data:
                pair[sock].sendall(data)  # type: ignore[index]
                continue
            selector.unregister(sock)
            open_ends -= 1
            with contextlib.suppress(OSError):
                pair[sock].shutdown(socket.SHUT_WR)  # type: ignore[index]
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # finished connections are reaped by the kernel
    while True:
        client, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            _pipe(client, path)
            os._exit(0)
        client.close()


def main() -> None:
    path, command = sys.argv[1], sys.argv[3:]
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", PORT))
    listener.listen(64)
    if os.fork() == 0:
        os.setsid()  # out of the command's process group: a signal to the command does not stop the proxy
        _serve(listener, path)
        os._exit(0)
    listener.close()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()

"""The engine's messages: one JSON object per message, length-prefixed, file descriptors beside the first bytes.

A run's request goes from the client to the engine with the client's stdin, stdout and stderr attached
(``SCM_RIGHTS``), and a fourth descriptor that proves the client may read the engine's process
(:func:`anvil.engine.peer.unproven`); everything else is a plain message: the child's pid, then its exit code;
the engine's status; a refusal with its reason.
"""

from __future__ import annotations

import array
import json
import socket
import struct
from typing import Any

_LENGTH = struct.Struct("!I")
#: a request carries the whole environment; anything much larger is not one
MAX_MESSAGE = 16 * 1024 * 1024
MAX_FDS = 4


class WireError(Exception):
    """The other end closed the connection or sent something that is not a message."""


def send(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    framed = _LENGTH.pack(len(data)) + data
    if fds:
        sent = sock.sendmsg([framed], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        framed = framed[sent:]
    if framed:
        sock.sendall(framed)


def receive(sock: socket.socket, *, with_fds: bool = False) -> tuple[dict[str, Any], list[int]]:
    """One message and the descriptors that came with it. WireError when the connection ends first."""
    fds: list[int] = []
    head = b""
    if with_fds:
        data, ancillary, _flags, _addr = sock.recvmsg(65536, socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                received = array.array("i")
                received.frombytes(payload[:len(payload) - len(payload) % received.itemsize])
                fds += list(received)
        head = data
        if not data:
            raise WireError("the connection closed")
    while len(head) < _LENGTH.size:
        head += _recv(sock, _LENGTH.size - len(head))
    (length,) = _LENGTH.unpack(head[:_LENGTH.size])
    if length > MAX_MESSAGE:
        raise WireError(f"a message of {length} bytes")
    body = head[_LENGTH.size:]
    while len(body) < length:
        body += _recv(sock, min(length - len(body), 1 << 20))
    try:
        message = json.loads(body[:length])
    except ValueError as exc:
        raise WireError(f"not a message: {exc}") from exc
    if not isinstance(message, dict):
        raise WireError("not a message")
    return message, fds


def _recv(sock: socket.socket, size: int) -> bytes:
    chunk = sock.recv(size)
    if not chunk:
        raise WireError("the connection closed")
    return chunk


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket (the kernel's word, not the peer's)."""
    return peer_ids(sock)[1]


def peer_ids(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a Unix socket, as the kernel recorded them (pid 0: it is in
    another pid namespace)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid

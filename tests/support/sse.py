"""Writing a server-sent-events response for the scripted servers, whole or cut off the way a dropped connection is.

A turn with ``"drop_after": N`` sends N events and then loses the connection in the middle of the next one: the
response is sent with chunked transfer encoding (as providers send streams), a chunk is announced and only part
of it arrives, and the socket is shut. The client sees what it sees when a network or a proxy drops a stream: an
incomplete body, not a clean end. ``"drop_after": 0`` cuts before the first event.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler

DROP_KEY = "drop_after"


def stream_sse(handler: BaseHTTPRequestHandler, events: Iterable[str], *, pace: float = 0.0,
               drop_after: int | None = None) -> None:
    """Send ``events`` (each a whole ``data: ...\\n\\n`` block), ``pace`` seconds apart; cut after ``drop_after``."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    if drop_after is None:
        handler.send_header("Connection", "close")
    else:
        handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    try:
        for sent, event in enumerate(events):
            if drop_after is not None and sent >= drop_after:
                _cut(handler, event.encode())
                return
            data = event.encode()
            handler.wfile.write(data if drop_after is None else f"{len(data):x}\r\n".encode() + data + b"\r\n")
            handler.wfile.flush()
            if pace:
                time.sleep(pace)
        if drop_after is not None:
            _cut(handler, b"data: {\"cut\": ")  # fewer events than the cut: the connection drops at the end
            return
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client hung up (an interrupt): nothing to do
    handler.close_connection = True


def _cut(handler: BaseHTTPRequestHandler, data: bytes) -> None:
    """Announce a chunk of ``data``'s size, send half of it, and drop the connection."""
    handler.wfile.write(f"{len(data) + 16:x}\r\n".encode() + data[: max(1, len(data) // 2)])
    handler.wfile.flush()
    handler.close_connection = True
    with contextlib.suppress(OSError):
        handler.connection.shutdown(socket.SHUT_RDWR)
    handler.connection.close()

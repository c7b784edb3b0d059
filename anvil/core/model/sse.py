"""The ``data`` of each server-sent event in a byte stream that arrives in pieces of any size.

The OpenAI SDK's decoder splits one line at a time in Python and builds an object per event: at one token an event,
1 MB/s of tool-call arguments in 10-character pieces is 100,000 events a second, and its decoder alone took most
of the time (issue 24). Here each piece read is split at its last blank line with bytes methods, which loop in C,
and an event that is one ``data:`` line (every event an OpenAI-compatible server sends) costs one slice.

Anything else takes the general path, which reads events as the SDK's decoder does (the WHATWG event-stream
rules): lines end at LF, CR or CRLF (a CRLF split between two pieces too); a blank line ends an event; a line
starting with ``:`` is a comment (keep-alives); ``data`` lines are joined with newlines; one space after the colon
is dropped; ``event``, ``id`` and ``retry`` fields are read past (OpenAI's chat-completion stream does not use
them, and the SDK reads every event's data whatever its type); an event cut off by the end of the stream is not
an event.
"""

from __future__ import annotations

_DATA = b"data: "


class EventData:
    """Feed it the stream's bytes as they come; each :meth:`feed` returns the data of the events completed."""

    __slots__ = ("_pending", "_skip_lf")

    def __init__(self) -> None:
        self._pending = b""  # the start of an event not yet ended, line ends as LF
        self._skip_lf = False  # the last piece ended in CR: an LF starting the next one belongs to it

    def feed(self, piece: bytes) -> list[bytes]:
        """The data of the events that ``piece`` completes, in order; events without a data line are left out."""
        if not piece:
            return []
        if self._skip_lf and piece.startswith(b"\n"):
            piece = piece[1:]
        self._skip_lf = piece.endswith(b"\r")
        if b"\r" in piece:
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._pending + piece if self._pending else piece
        end = buffer.rfind(b"\n\n")
        if end < 0:
            self._pending = buffer
            return []
        self._pending = buffer[end + 2:]
        complete = buffer[:end]
        blocks = complete.split(b"\n\n")
        data = [block[6:] for block in blocks if block.startswith(_DATA)]
        # Every block one "data: " line: no newline in the blocks beyond the blank lines between them.
        if len(data) == len(blocks) and complete.count(b"\n") == 2 * (len(blocks) - 1):
            return data
        return [event for event in map(_event_data, blocks) if event is not None]


def _event_data(block: bytes) -> bytes | None:
    """The data of one event's lines (LF-separated, no blank line among them but leading ones), or None."""
    data: list[bytes] = []
    for line in block.split(b"\n"):  # a comment (":...") or a leading blank line has no field name: passed over
        name, _, value = line.partition(b":")
        if name == b"data":
            data.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(data) if data else None

"""Command logs on disk, bounded: each one to a size cap (head and tail kept, the cut stated), all of them to
a total with the oldest removed first.

A command that prints without end (``yes``, a runaway test) once wrote gigabytes. :class:`CappedLog` keeps
the first two fifths of its cap and a tail: when the file outgrows the cap, the newest half of the tail
budget is moved up behind the head and a fixed-width line in between says how much was cut, so the file is
readable at every moment (``tail -f`` on a running job works) and never much larger than the cap.

A log that cannot be written (a full disk, a read-only data dir) never fails the command: the first error
is kept in ``error`` for the command's result to mention once, and logging stops.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import BinaryIO

from anvil.core.private_files import open_private, private_dir

_MB = 1024 * 1024
#: The line between head and tail once something was cut; fixed width so it can be rewritten in place.
_MARKER = "\n[… {cut:>15,} bytes cut from the middle of this log by anvil: a log keeps {cap} MB, its start and end …]\n"
_COPY_CHUNK = _MB


def _marker(cut: int, cap: int) -> bytes:
    return _MARKER.format(cut=cut, cap=f"{cap / _MB:g}").encode()


class CappedLog:
    """One command's log file, at most about ``cap`` bytes."""

    def __init__(self, path: Path, cap: int) -> None:
        self.path = path
        self.cap = max(cap, 4096)
        self.head_limit = self.cap * 2 // 5
        self.tail_limit = self.cap - self.head_limit - len(_marker(0, self.cap))
        self.written = 0  # bytes the command produced
        self.cut = 0  # bytes left out of the file
        self.error: str | None = None
        self._head_end: int | None = None  # where the head stops, once it is full
        self._file: BinaryIO | None = None
        try:
            private_dir(path.parent)
            fd = open_private(path, os.O_RDWR | os.O_TRUNC)
            self._file = os.fdopen(fd, "r+b")
        except OSError as exc:
            self._fail(exc)

    @property
    def ok(self) -> bool:
        return self._file is not None

    def write(self, text: str) -> None:
        if self._file is None or not text:
            return
        data = text.encode("utf-8", "replace")
        self.written += len(data)
        try:
            if self._head_end is None:
                data = self._fill_head(data)
            if data:
                self._file.seek(0, os.SEEK_END)
                self._file.write(data)
                if self._file.tell() > self._tail_end:
                    self._compact()
            self._file.flush()  # the model may read the log of a running job
        except OSError as exc:
            self._fail(exc)

    @property
    def _tail_end(self) -> int:
        """How far the file may grow before the tail is compacted."""
        assert self._head_end is not None
        return self._head_end + len(_marker(0, self.cap)) + self.tail_limit

    def _fill_head(self, data: bytes) -> bytes:
        assert self._file is not None
        room = self.head_limit - self._file.seek(0, os.SEEK_END)
        if len(data) <= room:
            self._file.write(data)
            return b""
        split = room
        newline = data.rfind(b"\n", max(0, room - 4096), room)
        if newline >= 0:
            split = newline + 1  # end the head at a line boundary when one is near
        self._file.write(data[:split])
        self._head_end = self._file.tell()
        return data[split:]

    def _compact(self) -> None:
        """Keep the newest half of the tail budget right behind the head, with the marker between them."""
        assert self._file is not None and self._head_end is not None
        end = self._file.seek(0, os.SEEK_END)
        keep = self.tail_limit // 2
        source = end - keep
        self._file.seek(source)
        first = self._file.read(min(4096, keep))
        newline = first.find(b"\n")
        if 0 <= newline < len(first) - 1:
            source += newline + 1  # start the kept tail at a line boundary when one is near
        marker = _marker(0, self.cap)
        target = self._head_end + len(marker)
        while source < end:  # forward copy in chunks: the target is always before the source
            self._file.seek(source)
            chunk = self._file.read(min(_COPY_CHUNK, end - source))
            self._file.seek(target)
            self._file.write(chunk)
            source += len(chunk)
            target += len(chunk)
        self._file.truncate(target)
        self.cut = self.written - (self._file.tell() - len(marker))
        self._file.seek(self._head_end)
        self._file.write(_marker(self.cut, self.cap))

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._fail(exc)
            self._file = None

    def _fail(self, exc: OSError) -> None:
        if self.error is None:
            self.error = f"{self.path}: {exc.strerror or exc}"
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None


class LogStore:
    """Where command logs go (``<data_dir>/logs/<session>/``), and the total cap over every session's logs."""

    def __init__(self, logs_dir: Path, session_id: str, total_cap: int) -> None:
        self.logs_dir = logs_dir
        self.session_dir = logs_dir / session_id
        self.total_cap = total_cap
        self.active: set[Path] = set()  # logs still being written: never removed
        self._seq = 0
        self._since_check: int | None = None  # bytes written since the last check; None: never checked

    def new_path(self, label: str) -> Path:
        self._seq += 1
        slug = re.sub(r"[^A-Za-z0-9]+", "-", label[:40]).strip("-") or "command"
        return self.session_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{self._seq:03d}-{slug}.log"

    def finished(self, log: CappedLog) -> None:
        """A log is complete: counted toward the total, which is checked every tenth of the cap written."""
        self.active.discard(log.path)
        if self._since_check is not None:
            self._since_check += log.written - log.cut
        if self._since_check is None or self._since_check > self.total_cap // 10:
            self.enforce()

    def enforce(self) -> list[Path]:
        """Remove the oldest logs until all of them fit the total cap; returns what was removed."""
        self._since_check = 0
        logs: list[tuple[float, int, Path]] = []
        with contextlib.suppress(OSError):
            for directory, _dirs, files in os.walk(self.logs_dir):
                for name in files:
                    path = Path(directory) / name
                    with contextlib.suppress(OSError):
                        st = path.stat()
                        logs.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in logs)
        removed: list[Path] = []
        for _, size, path in sorted(logs):
            if total <= self.total_cap:
                break
            if path in self.active:
                continue
            with contextlib.suppress(OSError):
                path.unlink()
                total -= size
                removed.append(path)
                if path.parent != self.session_dir:
                    with contextlib.suppress(OSError):
                        path.parent.rmdir()  # a session whose logs are all gone
        return removed

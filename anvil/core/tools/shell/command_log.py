"""Command logs on disk, bounded: each one to a size cap (head and tail kept, the cut stated), all of them to
a total with the oldest removed first.

A command that prints without end (``yes``, a runaway test) once wrote gigabytes. :class:`CappedLog` keeps
the first two fifths of its cap and a tail: when the file outgrows the cap, the newest half of the tail
budget is moved up behind the head and a fixed-width line in between says how much was cut, so the file is
readable at every moment (``tail -f`` on a running job works) and never much larger than the cap.

A log that cannot be written (a full disk, a read-only data dir) never fails the command. What could not be
written is held in memory, within the log's cap (the middle cut as on disk), and appended as soon as a write
works again: on the command's next output, or, once the command is over, when the next command starts or ends
(:class:`LogStore` keeps such logs). ``error`` keeps the first failure for the command's result, and the
store's ``trouble`` tells the person once when writing fails and once when it works again, as the session file
does. Writes go through ``os.write`` on the descriptor, and a failed append is cut back, so the file never holds a
half-written piece.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

from anvil.core.private_files import open_private, private_dir
from anvil.core.session.trouble import WriteTrouble

_MB = 1024 * 1024
#: The line between head and tail once something was cut; fixed width so it can be rewritten in place.
_MARKER = "\n[… {cut:>15,} bytes cut from the middle of this log by anvil: a log keeps {cap} MB, its start and end …]\n"
_COPY_CHUNK = _MB
#: seconds between attempts to write a log while its disk is full
RETRY_INTERVAL = 0.5
#: bytes the logs of finished commands may hold in memory together, waiting for room on the disk
HELD_LIMIT = 64 * _MB


def _marker(cut: int, cap: int) -> bytes:
    return _MARKER.format(cut=cut, cap=f"{cap / _MB:g}").encode()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class CappedLog:
    """One command's log file, at most about ``cap`` bytes; what a full disk kept out is held until it fits."""

    def __init__(self, path: Path, cap: int, trouble: WriteTrouble | None = None) -> None:
        self.path = path
        self.cap = max(cap, 4096)
        self.head_limit = self.cap * 2 // 5
        self.tail_limit = self.cap - self.head_limit - len(_marker(0, self.cap))
        self.written = 0  # bytes the command produced
        self.cut = 0  # bytes left out of the file
        self.error: str | None = None  # the first failure to write, for the command's result
        self.trouble = trouble or WriteTrouble(f"the command log {path}")
        self._head_end: int | None = None  # where the head stops, once it is full
        self._fd: int | None = None
        self._created = False  # the file was opened (and emptied) once; later opens append to it
        self._pending = bytearray()  # produced, not on disk yet (a full disk), oldest first
        self._size = 0  # the file's size as anvil left it
        self._dropped = 0  # bytes of the pending middle dropped to stay within the cap, not yet stated on disk
        self._retry_at = 0.0  # monotonic time before which a failed write is not tried again
        self._flush()

    @property
    def ok(self) -> bool:
        """Everything produced so far is in the file."""
        return self._created and not self._pending

    @property
    def held(self) -> int:
        """Bytes held in memory because the file could not take them yet."""
        return len(self._pending)

    def write(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8", "replace")
        self.written += len(data)
        self._pending += data
        self._keep_within_cap()
        self._flush()

    def _keep_within_cap(self) -> None:
        """Held bytes never exceed what the file would keep: the head still to fill, then the tail budget."""
        head_room = self.head_limit - self._size if self._head_end is None else 0
        room = max(head_room, 0) + self.tail_limit
        excess = len(self._pending) - room
        if excess > 0:
            keep_from = max(head_room, 0)
            del self._pending[keep_from:keep_from + excess]
            self._dropped += excess

    def _open(self) -> int:
        if self._fd is None:
            private_dir(self.path.parent)
            self._fd = open_private(self.path, os.O_RDWR | (0 if self._created else os.O_TRUNC))
            self._created = True
        return self._fd

    def _flush(self, *, now: bool = False) -> bool:
        """Write what is held; False (and it stays held) when the file cannot take it. While writing fails, a
        new attempt waits :data:`RETRY_INTERVAL` unless ``now`` (a command that prints fast would try each piece)."""
        if not self._pending and self._created:
            return True
        if not now and time.monotonic() < self._retry_at:
            return False
        head_end = self._head_end
        try:
            fd = self._open()
            try:
                self._append(fd, bytes(self._pending))
            except OSError:
                self._head_end = head_end
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, self._size)  # no half piece left behind: it is written whole later
                raise
            self._size = os.lseek(fd, 0, os.SEEK_END)
            count, self._pending = len(self._pending), bytearray()
            if self._head_end is not None and (self._size > self._tail_end or self._dropped):
                self._compact(fd)
        except OSError as exc:
            self._fail(exc)
            return False
        self.trouble.recovered(0, held="the output held in memory is written now" if count else "")
        return True

    def _append(self, fd: int, data: bytes) -> None:
        if self._head_end is None:
            room = self.head_limit - self._size
            if len(data) <= room:
                os.lseek(fd, 0, os.SEEK_END)
                _write_all(fd, data)
                return
            split = room
            newline = data.rfind(b"\n", max(0, room - 4096), room)
            if newline >= 0:
                split = newline + 1  # end the head at a line boundary when one is near
            os.lseek(fd, 0, os.SEEK_END)
            _write_all(fd, data[:split])
            self._head_end, data = self._size + split, data[split:]
        os.lseek(fd, 0, os.SEEK_END)
        _write_all(fd, data)

    @property
    def _tail_end(self) -> int:
        """How far the file may grow before the tail is compacted."""
        assert self._head_end is not None
        return self._head_end + len(_marker(0, self.cap)) + self.tail_limit

    def _compact(self, fd: int) -> None:
        """Keep the newest half of the tail budget right behind the head, with the marker between them."""
        assert self._head_end is not None
        end = self._size
        keep = min(self.tail_limit // 2, end - self._head_end)
        source = end - keep
        os.lseek(fd, source, os.SEEK_SET)
        first = os.read(fd, min(4096, keep))
        newline = first.find(b"\n")
        if 0 <= newline < len(first) - 1:
            source += newline + 1  # start the kept tail at a line boundary when one is near
        marker = _marker(0, self.cap)
        target = self._head_end + len(marker)
        if source < target:  # too little tail to move: the marker would overwrite it (a cut held in memory)
            source, target = target, target
        while source < end:  # forward copy in chunks: the target is always before the source
            os.lseek(fd, source, os.SEEK_SET)
            chunk = os.read(fd, min(_COPY_CHUNK, end - source))
            os.lseek(fd, target, os.SEEK_SET)
            _write_all(fd, chunk)
            source += len(chunk)
            target += len(chunk)
        os.ftruncate(fd, target)
        self._size = target
        self.cut = self.written - (target - len(marker))
        self._dropped = 0
        os.lseek(fd, self._head_end, os.SEEK_SET)
        _write_all(fd, _marker(self.cut, self.cap))

    def close(self) -> bool:
        """Stop writing; True when everything is on disk (else the rest is held for :meth:`retry`)."""
        self._flush(now=True)
        self._close_fd()
        return not self._pending

    def retry(self) -> bool:
        """For a closed log still holding output: write it now if the disk takes it. True when nothing is left."""
        if self._pending or not self._created:
            self._flush(now=True)
            self._close_fd()
        return not self._pending

    def abandon(self) -> int:
        """Give up what is held (the session ends, or memory is needed); returns how many bytes were lost."""
        lost, self._pending = len(self._pending), bytearray()
        self._close_fd()
        return lost

    def _close_fd(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _fail(self, exc: OSError) -> None:
        if self.error is None:
            self.error = f"{self.path}: {exc.strerror or exc}"
        self.trouble.failed(exc, self.path)
        self._retry_at = time.monotonic() + RETRY_INTERVAL


class LogStore:
    """Where command logs go (``<data_dir>/logs/<session>/``), and the total cap over every session's logs."""

    def __init__(self, logs_dir: Path, session_id: str, total_cap: int) -> None:
        self.logs_dir = logs_dir
        self.session_dir = logs_dir / session_id
        self.total_cap = total_cap
        self.active: set[Path] = set()  # logs still being written: never removed
        #: every log of the session reports here: the person hears once that writing fails, once that it works
        self.trouble = WriteTrouble(f"the command logs in {self.session_dir}")
        self.waiting: list[CappedLog] = []  # finished logs still holding output a full disk kept out, oldest first
        self._seq = 0
        self._since_check: int | None = None  # bytes written since the last check; None: never checked

    def new_path(self, label: str) -> Path:
        self._seq += 1
        slug = re.sub(r"[^A-Za-z0-9]+", "-", label[:40]).strip("-") or "command"
        return self.session_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{self._seq:03d}-{slug}.log"

    def new_log(self, label: str, cap: int) -> CappedLog:
        """The log of a command starting now (earlier logs still holding output are tried again first)."""
        self.retry_waiting()
        log = CappedLog(self.new_path(label), cap, self.trouble)
        self.active.add(log.path)
        return log

    def retry_waiting(self) -> None:
        """Write what finished logs hold, where the disk takes it now."""
        self.waiting = [log for log in self.waiting if not log.retry()]

    def close(self) -> None:
        """The session ends: a last try for what is held; what still cannot be written is said lost."""
        self.retry_waiting()
        if self.waiting:
            lost = sum(log.abandon() for log in self.waiting)
            self.trouble.lost(f"{lost:,} bytes of output of {len(self.waiting)} command(s) could not be written to "
                              f"their logs in {self.session_dir} before the session ended (the disk was full).")
            self.waiting = []

    def finished(self, log: CappedLog) -> None:
        """A log is complete: counted toward the total, which is checked every tenth of the cap written."""
        self.active.discard(log.path)
        if log.held:
            self.waiting.append(log)
            self._limit_held()
        self.retry_waiting()
        if self._since_check is not None:
            self._since_check += log.written - log.cut
        if self._since_check is None or self._since_check > self.total_cap // 10:
            self.enforce()

    def _limit_held(self) -> None:
        """Memory is not a second disk: past :data:`HELD_LIMIT`, the oldest held output is given up, and said so."""
        while self.waiting and sum(log.held for log in self.waiting) > HELD_LIMIT:
            oldest = self.waiting.pop(0)
            lost = oldest.abandon()
            self.trouble.lost(f"{lost:,} bytes of output held for {oldest.path} were dropped: the disk stayed full "
                              f"and anvil keeps at most {HELD_LIMIT // _MB} MB of command output in memory.")

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

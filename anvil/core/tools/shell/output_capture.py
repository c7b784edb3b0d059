"""Capturing command output for the model: cleaned of terminal control codes, bounded in memory.

:class:`OutputCollector` decodes a process's bytes incrementally, strips ANSI escapes and progress-bar
rewrites, keeps only a head and a tail in memory (:class:`HeadTail`) however much a command prints,
and streams the text to a capped log file (:mod:`command_log`).
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path

from anvil.core.tools.shell.command_log import CappedLog

_ANSI = re.compile(
    r"""
      \x1b\[[0-?]*[ -/]*[@-~]              # CSI: colours, cursor movement, erase line
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)    # OSC: window titles, hyperlinks
    | \x1b[PX^_][^\x1b]*\x1b\\             # DCS / SOS / PM / APC strings
    | \x1b[()*+][0-9A-Za-z]                # character set selection
    | \x1b[@-Z\\-_=>78]                    # two-byte escapes
    """,
    re.VERBOSE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_OVERSTRIKE = re.compile(r"[^\x08\n]\x08")


def clean_output(text: str) -> str:
    """What the model should see of terminal output: no escapes, no overwritten progress lines."""
    text = _ANSI.sub("", text)
    if "\r" in text or "\b" in text:
        text = "\n".join(_clean_line(line) for line in text.split("\n"))
    return _CONTROL.sub("", text)


def _clean_line(line: str) -> str:
    if line.endswith("\r"):
        line = line[:-1]
    if "\r" in line:
        # a progress bar redraws its line with \r: only the last drawing is worth reading
        line = next((part for part in reversed(line.split("\r")) if part), "")
    while "\b" in line:
        stripped = _OVERSTRIKE.sub("", line)  # man-page style bold: "N\bN"
        if stripped == line:
            break
        line = stripped
    return line


class HeadTail:
    """The first and last characters of a stream in bounded memory, counting what falls between."""

    def __init__(self, budget: int) -> None:
        budget = max(budget, 200)
        # the end of the output (errors, summaries) is usually worth more than its start
        self.head_limit = budget * 2 // 5
        self.tail_limit = budget - self.head_limit
        self.head = ""
        self.tail = ""
        self.total = 0
        self.newlines = 0
        self.dropped = False
        self.ends_with_newline = True

    @classmethod
    def of(cls, text: str, budget: int) -> HeadTail:
        kept = cls(budget)
        kept.add(text)
        return kept

    def add(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        self.newlines += text.count("\n")
        self.ends_with_newline = text.endswith("\n")
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        self.tail += text
        if len(self.tail) > 2 * self.tail_limit:  # trim in batches so adding stays cheap
            self.tail = self.tail[-self.tail_limit:]
            self.dropped = True

    @property
    def lines(self) -> int:
        return self.newlines + (0 if self.ends_with_newline else 1)

    @property
    def truncated(self) -> bool:
        return self.dropped or len(self.tail) > self.tail_limit

    def render(self, log_path: Path | None = None) -> str:
        """The kept text; when the middle was cut, a marker says how much and where the rest is."""
        if not self.truncated:
            return self.head + self.tail
        head, tail = self.head, self.tail[-self.tail_limit:]
        # cut at line boundaries when one is near, so no half lines reach the model
        if "\n" in head[len(head) // 2:]:
            head = head[: head.rindex("\n") + 1]
        if "\n" in tail[: len(tail) // 2]:
            tail = tail[tail.index("\n") + 1:]
        cut = self.total - len(head) - len(tail)
        lines = self.newlines - head.count("\n") - tail.count("\n")
        where = f"; full output in {log_path}" if log_path else ""
        gap = "" if head.endswith("\n") or not head else "\n"
        return f"{head}{gap}[… {cut:,} characters ({lines:,} lines) cut from the middle{where} …]\n{tail}"

    def last(self, chars: int) -> str:
        """The end of everything added, starting at a line boundary when possible."""
        text = self.tail if self.truncated else self.head + self.tail
        if len(text) <= chars:
            return text
        text = text[-chars:]
        return text[text.find("\n") + 1:] if "\n" in text[: chars // 2] else text


class OutputCollector:
    """Receives a process's raw bytes: decodes, cleans, logs everything (to a capped log), keeps head + tail."""

    def __init__(self, budget: int, log: CappedLog | None, mask: Callable[[str], str] = str) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""  # an unfinished line: cleaned only once complete, so \r rewrites resolve
        self._budget = budget
        self.whole = HeadTail(budget)
        self.unread = HeadTail(budget)
        self.log = log
        self._mask = mask  # known secrets never reach the log file; the model's copy is the loop's business

    @property
    def log_path(self) -> Path | None:
        """The log file (what a full disk kept out of it is appended once there is room)."""
        return self.log.path if self.log is not None else None

    @property
    def log_error(self) -> str | None:
        """Why part of the output is not in the log yet; None once all of it is."""
        return self.log.error if self.log is not None and self.log.held else None

    def feed(self, data: bytes) -> None:
        text = self._pending + self._decoder.decode(data)
        end = text.rfind("\n") + 1
        if end == 0 and len(text) < 8192:  # a very long line without newline is flushed anyway
            self._pending = text
            return
        end = end or len(text)
        self._pending = text[end:]
        self._emit(text[:end])

    def flush_partial(self) -> None:
        """Hand on an unfinished last line too (a prompt or a progress line someone is waiting on)."""
        if self._pending:
            text, self._pending = self._pending, ""
            self._emit(text)

    def finish(self) -> None:
        self._pending += self._decoder.decode(b"", final=True)
        self.flush_partial()
        if self.log is not None:
            self.log.close()

    def take_unread(self) -> HeadTail:
        self.flush_partial()
        unread, self.unread = self.unread, HeadTail(self._budget)
        return unread

    def _emit(self, text: str) -> None:
        text = clean_output(text)
        self.whole.add(text)
        self.unread.add(text)
        if self.log is not None:
            self.log.write(self._mask(text))

"""The data of an edit: what was asked, where it applied, why it failed; and the file's lines, indexed.

Kept apart from the matching steps so both :mod:`edit_match` (the chain) and :mod:`edit_blocks` (the
line-block steps) can share them without importing each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

MatchStep = Literal["exact", "line_endings", "trailing_whitespace", "blank_lines", "indentation", "typography",
                    "unescaped", "fuzzy"]
FailureKind = Literal["empty_old_string", "no_change", "not_found", "ambiguous", "ambiguous_fuzzy", "indentation",
                      "placeholder"]

STEP_DESCRIPTIONS: dict[MatchStep, str] = {
    "exact": "exact match",
    "line_endings": "matched after normalising line endings",
    "trailing_whitespace": "matched ignoring trailing whitespace",
    "blank_lines": "matched without the blank lines at the start or end of old_string, which the file does not "
                   "have there",
    "indentation": "matched ignoring indentation; new_string was re-indented to the file's indentation",
    "typography": "matched treating curly quotes, dashes, ellipses and special spaces as plain ones",
    "unescaped": "matched after unescaping old_string (\\\" as \", \\n as a line break, \\t as a tab); new_string "
                 "was unescaped the same way",
    "fuzzy": "fuzzy match",
}

FUZZY_THRESHOLD = 0.85
#: A rival block scoring within this of the best makes a fuzzy match ambiguous.
FUZZY_MARGIN = 0.03
#: Below three lines a 15% difference is a different line of code, not a typo: no fuzzy matching.
FUZZY_MIN_LINES = 3
#: Fuzzy matching only scores blocks around lines that resemble an anchor line of old_string (its first,
#: last and longest lines), at most this many per anchor, so a 10 MB file costs a few hundred block
#: comparisons instead of one per line. A block whose anchors all differ by more than the cutoff
#: cannot realistically reach the threshold anyway.
ANCHOR_HITS = 40
ANCHOR_CUTOFF = 60.0
TAB_WIDTH = 4
#: A closest region less similar than this is noise, not a hint: the failure says nothing resembles it.
CLOSEST_MIN_SIMILARITY = 0.5
_MAX_LISTED = 10


def similarity_label(score: float) -> str:
    """A similarity as a failure states it: rounded down, so text that differs never reads as 1.00."""
    if score >= 1.0:
        return "the same text apart from whitespace"
    return f"similarity {math.floor(score * 100) / 100:.2f}"


@dataclass(frozen=True)
class LineRange:
    """1-based, inclusive."""

    first: int
    last: int

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"

    def label(self) -> str:
        return f"line {self}" if self.first == self.last else f"lines {self}"


@dataclass(frozen=True)
class Scope:
    """Where a match may lie, for edits that come with their own position (apply_patch hunks): whole lines
    only, from line ``first`` to before line ``end`` (0-based; None: the end of the text)."""

    first: int = 0
    end: int | None = None
    #: the match must end at ``end`` (a hunk marked ``*** End of File``)
    at_end: bool = False

    def allows(self, start: int, size: int) -> bool:
        """Whether the ``size`` lines from line ``start`` lie inside the scope."""
        if self.end is not None and self.at_end:
            return start >= self.first and start + size == self.end
        return start >= self.first and (self.end is None or start + size <= self.end)


@dataclass(frozen=True)
class Region:
    """The part of the file most like old_string, shown when an edit fails."""

    lines: LineRange
    text: str
    similarity: float

    def label(self) -> str:
        return f"{self.lines.label()} ({similarity_label(self.similarity)})"


@dataclass(frozen=True)
class EditApplied:
    text: str
    step: MatchStep
    #: Where old_string matched, in the text before the edit.
    ranges: tuple[LineRange, ...]
    similarity: float = 1.0

    @property
    def count(self) -> int:
        return len(self.ranges)


@dataclass(frozen=True)
class EditFailed:
    kind: FailureKind
    message: str
    #: The competing matches of an ambiguous edit.
    ranges: tuple[LineRange, ...] = ()
    closest: Region | None = None


@dataclass(frozen=True)
class Edit:
    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(frozen=True)
class MultiEditApplied:
    text: str
    results: tuple[EditApplied, ...]


@dataclass(frozen=True)
class MultiEditFailed:
    index: int  # 0-based position of the edit that failed
    failure: EditFailed


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    replacement: str
    similarity: float = 1.0


class _Lines:
    """Line views of the text, built on first use: the exact step never pays for them."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._cursor = (0, 0)  # (line, offset) of the last offset asked for

    @cached_property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    @cached_property
    def count(self) -> int:
        """Real lines: the empty piece after a final newline is not one."""
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)

    @cached_property
    def stripped(self) -> list[str]:
        return [line.strip() for line in self.lines]

    def offset(self, line: int) -> int:
        """Where ``line`` (0-based) starts. Spans are asked for in order, so each call only sums the
        lengths of the lines since the previous one instead of building a table for the whole file."""
        known_line, known_offset = self._cursor if line >= self._cursor[0] else (0, 0)
        offset = known_offset + sum(map(len, self.lines[known_line:line])) + (line - known_line)
        self._cursor = (line, offset)
        return offset

    def span(self, first: int, count: int, with_newline: bool) -> tuple[int, int]:
        """Character span of ``count`` whole lines from ``first`` (0-based)."""
        start = self.offset(first)
        last = first + count - 1
        end = self.offset(last) + len(self.lines[last])
        if with_newline and end < len(self.text):
            end += 1
        return start, end

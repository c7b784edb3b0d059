"""Unified diffs as data: parse the text the tools produce into files, hunks and numbered lines.

Pure functions only (no Textual, no Rich) so the parsing is tested on its own and the widget in
``diff_view.py`` only decides how things look. The parser trusts the hunk header counts rather than
the first character of each line: a removed line that reads ``-- x`` looks like a ``--- `` file
header, and only the counts tell the two apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

LineKind = Literal["context", "add", "remove"]

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_KIND_BY_PREFIX: dict[str, LineKind] = {" ": "context", "+": "add", "-": "remove"}


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk with its numbers in the old and new file (None where it does not exist)."""

    kind: LineKind
    text: str
    old_no: int | None
    new_no: int | None
    #: the diff said "\ No newline at end of file" right after this line
    no_newline: bool = False


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    #: what follows the second ``@@``: git puts the enclosing function or class there
    section: str = ""
    lines: tuple[DiffLine, ...] = ()

    @property
    def header(self) -> str:
        text = f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"
        return f"{text} {self.section}" if self.section else text


@dataclass(frozen=True)
class FileDiff:
    """The changes to one file. A path is None when that side is ``/dev/null`` (a new or deleted file)."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...] = ()
    #: lines the parser could not place (e.g. "… diff cut here" notes a tool appended); shown, not dropped
    notes: tuple[str, ...] = field(default=())

    @property
    def path(self) -> str | None:
        return self.new_path or self.old_path

    @property
    def is_new(self) -> bool:
        return self.old_path is None and self.new_path is not None

    @property
    def is_deleted(self) -> bool:
        return self.new_path is None and self.old_path is not None

    @property
    def additions(self) -> int:
        return sum(1 for hunk in self.hunks for line in hunk.lines if line.kind == "add")

    @property
    def deletions(self) -> int:
        return sum(1 for hunk in self.hunks for line in hunk.lines if line.kind == "remove")


def header_path(raw: str) -> str | None:
    """The path in a ``---``/``+++`` header: ``a/``/``b/`` prefix and timestamp removed; None for /dev/null."""
    path = raw.split("\t", 1)[0].strip()
    if path == "/dev/null" or not path:
        return None
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        path = path[1:-1]
    if path[:2] in ("a/", "b/"):
        path = path[2:]
    return path


def parse_unified_diff(text: str) -> list[FileDiff]:
    """Split a unified diff (one or several files, git-style or plain) into :class:`FileDiff` objects.

    Hunks without file headers (a bare ``@@`` diff) give one FileDiff with both paths None.
    Malformed or extra lines never raise: they end up in ``notes`` so nothing silently vanishes.
    """
    files: list[FileDiff] = []
    old_path: str | None = None
    new_path: str | None = None
    hunks: list[Hunk] = []
    notes: list[str] = []
    started = False  # a file is being collected (headers or hunks seen)

    def flush() -> None:
        nonlocal hunks, notes, started
        if started and (hunks or notes or old_path or new_path):
            files.append(FileDiff(old_path, new_path, tuple(hunks), tuple(notes)))
        hunks, notes, started = [], [], False

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git ") or (line.startswith("--- ") and i + 1 < len(lines)
                                               and lines[i + 1].startswith("+++ ")):
            if line.startswith("diff --git "):
                flush()
                started = True
                i += 1
                continue
            if hunks:  # a second file without a "diff --git" line in between
                flush()
            started = True
            old_path, new_path = header_path(line[4:]), header_path(lines[i + 1][4:])
            i += 2
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            if not started:
                old_path = new_path = None
                started = True
            hunk, i = _parse_hunk(lines, i + 1, match)
            hunks.append(hunk)
            continue
        if started and hunks and line.strip():
            notes.append(line)
        # git's "index …", "new file mode …", "similarity …" lines carry nothing we show
        i += 1
    flush()
    return files


def _parse_hunk(lines: list[str], i: int, match: re.Match[str]) -> tuple[Hunk, int]:
    old_start, new_start = int(match.group(1)), int(match.group(3))
    old_count = int(match.group(2)) if match.group(2) is not None else 1
    new_count = int(match.group(4)) if match.group(4) is not None else 1
    old_left, new_left = old_count, new_count
    # "-0,0" means the file had no lines; numbering of the first real line is then 1, not 0
    old_no = old_start if old_count else old_start + 1
    new_no = new_start if new_count else new_start + 1
    body: list[DiffLine] = []
    while i < len(lines) and (old_left > 0 or new_left > 0):
        raw = lines[i]
        if raw.startswith("\\"):
            _mark_no_newline(body)
            i += 1
            continue
        # Some tools strip the single space of an empty context line; treat "" as that line.
        prefix, text = (raw[0], raw[1:]) if raw else (" ", "")
        kind = _KIND_BY_PREFIX.get(prefix)
        if kind is None or (kind != "add" and old_left == 0) or (kind != "remove" and new_left == 0):
            break  # the counts were wrong or the hunk was cut: stop here rather than misnumber lines
        if kind == "context":
            body.append(DiffLine("context", text, old_no, new_no))
            old_no, new_no, old_left, new_left = old_no + 1, new_no + 1, old_left - 1, new_left - 1
        elif kind == "remove":
            body.append(DiffLine("remove", text, old_no, None))
            old_no, old_left = old_no + 1, old_left - 1
        else:
            body.append(DiffLine("add", text, None, new_no))
            new_no, new_left = new_no + 1, new_left - 1
        i += 1
    # The marker follows the hunk's last line, after the counts are used up.
    while i < len(lines) and lines[i].startswith("\\"):
        _mark_no_newline(body)
        i += 1
    hunk = Hunk(old_start, old_count, new_start, new_count, match.group(5).strip(), tuple(body))
    return hunk, i


def _mark_no_newline(body: list[DiffLine]) -> None:
    if body:
        last = body[-1]
        body[-1] = DiffLine(last.kind, last.text, last.old_no, last.new_no, no_newline=True)


Row = tuple[DiffLine | None, DiffLine | None]


def side_by_side_rows(hunk: Hunk) -> list[Row]:
    """Pair a hunk's lines for a split view: context on both sides; a run of removals beside the
    run of additions that follows it, padded with None where one side is shorter."""
    rows: list[Row] = []
    removed: list[DiffLine] = []
    added: list[DiffLine] = []

    def pair_up() -> None:
        for k in range(max(len(removed), len(added))):
            rows.append((removed[k] if k < len(removed) else None, added[k] if k < len(added) else None))
        removed.clear()
        added.clear()

    for line in hunk.lines:
        if line.kind == "context":
            pair_up()
            rows.append((line, line))
        elif line.kind == "remove":
            if added:  # a removal after additions starts a new change block
                pair_up()
            removed.append(line)
        else:
            added.append(line)
    pair_up()
    return rows


def count_lines(files: list[FileDiff]) -> int:
    """Body lines across all hunks: what a view would render, used to cap large diffs."""
    return sum(len(hunk.lines) for file in files for hunk in file.hunks)

"""Parsing the ``*** Begin Patch`` format that OpenAI's GPT-5 and codex models write, strictly.

::

    *** Begin Patch
    *** Add File: path          then its lines, each starting with +
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       optional, right after Update File
    @@ class Name               a hunk; text after @@ is an anchor line that locates it (several @@ lines
    @@     def method(self):    narrow it step by step); a bare @@ has none
     context line               a space: unchanged
    -removed line
    +added line
    *** End of File             optional: the hunk ends at the end of the file
    *** End Patch

An empty line inside a hunk is an empty context line (models drop the space of blank context lines), except
empty lines just before the next file's section, which separate sections. The first hunk of a file may omit its
@@ line. Anything else is a syntax error naming the patch line; parsing never
guesses. Line endings of the patch itself (CRLF) do not matter.
"""

from __future__ import annotations

from dataclasses import dataclass

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
HEADERS = f"'{ADD}<path>', '{DELETE}<path>', '{UPDATE}<path>' or '{END}'"


class PatchSyntaxError(ValueError):
    """The patch text does not follow the format; the message names the line and what was expected."""


@dataclass(frozen=True)
class Hunk:
    number: int  # 1-based, within its file
    line: int  # the patch line it starts at
    anchors: tuple[str, ...]
    old: tuple[str, ...]  # context and - lines: what the file has now
    new: tuple[str, ...]  # context and + lines: what it gets instead
    at_end: bool = False

    def label(self) -> str:
        anchors = "".join(f", @@ {anchor}" for anchor in self.anchors)
        return f"hunk {self.number} (patch line {self.line}{anchors})"


@dataclass(frozen=True)
class AddFile:
    path: str
    lines: tuple[str, ...]
    line: int

    @property
    def text(self) -> str:
        return "".join(line + "\n" for line in self.lines)


@dataclass(frozen=True)
class DeleteFile:
    path: str
    line: int


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    hunks: tuple[Hunk, ...]
    line: int


FileOp = AddFile | DeleteFile | UpdateFile


def parse_patch(text: str) -> list[FileOp]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise PatchSyntaxError(f"The patch is empty. It must start with '{BEGIN}' and end with '{END}'.")
    last = max(i for i, line in enumerate(lines) if line.strip())
    if lines[first].strip() != BEGIN:
        raise PatchSyntaxError(f"Line {first + 1} is '{_shown(lines[first])}', but a patch must start with "
                               f"'{BEGIN}'. Send only the patch text, from '{BEGIN}' to '{END}'.")
    if lines[last].strip() != END or last == first:
        raise PatchSyntaxError(f"The patch must end with '{END}' (its last line, {last + 1}, is "
                               f"'{_shown(lines[last])}'). Did the patch get cut off?")
    return _Parser(lines, first + 1, last).parse()


def _shown(line: str, limit: int = 80) -> str:
    return line if len(line) <= limit else line[:limit] + "…"


class _Parser:
    def __init__(self, lines: list[str], start: int, end: int) -> None:
        self.lines = lines
        self.index = start  # 0-based position of the next line to read
        self.end = end  # the *** End Patch line

    def error(self, message: str, index: int | None = None) -> PatchSyntaxError:
        index = self.index if index is None else index
        return PatchSyntaxError(f"Patch line {index + 1} ('{_shown(self.lines[index])}'): {message}")

    def parse(self) -> list[FileOp]:
        ops: list[FileOp] = []
        while self.index < self.end:
            line = self.lines[self.index]
            if not line.strip():
                self.index += 1
                continue
            ops.append(self._file_op(line))
        if not ops:
            raise PatchSyntaxError(f"The patch has no file operations between '{BEGIN}' and '{END}': add "
                                   f"{HEADERS.rsplit(' or ', 1)[0]} sections.")
        return ops

    def _path(self, line: str, marker: str) -> str:
        path = line[len(marker):].strip()
        if not path:
            raise self.error("the file path is missing.")
        return path

    def _file_op(self, line: str) -> FileOp:
        start = self.index
        if line.startswith(ADD):
            path = self._path(line, ADD)
            self.index += 1
            added = []
            while self.index < self.end and not self.lines[self.index].startswith("*** "):
                current = self.lines[self.index]
                if not current.strip() and self._blank_run_ends_hunks():
                    self.index += 1  # blank lines before the next section
                    continue
                if not current.startswith("+"):
                    raise self.error("every line of an added file starts with '+' (the file's lines), up to the "
                                     "next '*** ' line. Write '+' alone for an empty line.")
                added.append(current[1:])
                self.index += 1
            return AddFile(path, tuple(added), start + 1)
        if line.startswith(DELETE):
            path = self._path(line, DELETE)
            self.index += 1
            if self.index < self.end and self.lines[self.index].strip() and \
                    not self.lines[self.index].startswith("*** "):
                raise self.error("nothing may follow '*** Delete File:' but the next section.")
            return DeleteFile(path, start + 1)
        if line.startswith(UPDATE):
            return self._update(self._path(line, UPDATE), start)
        if line.startswith(("*** Add File:", "*** Delete File:", "*** Update File:", "*** Move to:")):
            raise self.error("the marker needs one space after its colon, then the path.")
        raise self.error(f"expected a file operation: {HEADERS}.")

    def _update(self, path: str, start: int) -> UpdateFile:
        self.index += 1
        move_to = None
        if self.index < self.end and self.lines[self.index].startswith(MOVE):
            move_to = self._path(self.lines[self.index], MOVE)
            self.index += 1
        hunks: list[Hunk] = []
        while self.index < self.end and not self.lines[self.index].startswith("*** "):
            if not self.lines[self.index].strip() and self._blank_run_ends_hunks():
                self.index += 1  # blank lines between hunks or sections
                continue
            hunks.append(self._hunk(len(hunks) + 1, first=not hunks))
        if self.index < self.end and self.lines[self.index].startswith(MOVE):
            raise self.error("'*** Move to:' must come right after its '*** Update File:' line.")
        if self.index < self.end and self.lines[self.index].rstrip() == END_OF_FILE:
            raise self.error("'*** End of File' must end a hunk, after its lines.")
        if not hunks and move_to is None:
            raise self.error(f"'{UPDATE}{path}' has no hunks: add '@@' hunks with the lines to change, or "
                             "'*** Move to:' to rename it.", start)
        return UpdateFile(path, move_to, tuple(hunks), start + 1)

    def _blank_run_ends_hunks(self) -> bool:
        """Only blank lines come before the next '@@' or '*** ' line (or the end of the patch)."""
        index = self.index
        while index < self.end and not self.lines[index].strip():
            index += 1
        return index >= self.end or self.lines[index].startswith(("@@", "*** "))

    def _hunk(self, number: int, first: bool) -> Hunk:
        start = self.index
        anchors: list[str] = []
        while self.index < self.end and self.lines[self.index].startswith("@@"):
            anchor = self.lines[self.index][2:].strip()
            if anchor:
                anchors.append(anchor)
            self.index += 1
        if self.index == start and not first:
            raise self.error("expected '@@' to start the next hunk (a hunk line starts with ' ', '-' or '+').")
        old: list[str] = []
        new: list[str] = []
        changed = at_end = False
        separators = 0  # empty lines (not even a space) at the end so far
        while self.index < self.end:
            line = self.lines[self.index]
            if line.startswith(("@@", "*** ")):
                if line.rstrip() == END_OF_FILE:
                    at_end = True
                    self.index += 1
                break
            separators = separators + 1 if not line else 0
            kind, body = (line[:1], line[1:]) if line else (" ", "")
            if kind not in (" ", "-", "+"):
                raise self.error("a hunk line starts with ' ' (context), '-' (removed) or '+' (added); an "
                                 "empty line counts as empty context.")
            if kind != "+":
                old.append(body)
            if kind != "-":
                new.append(body)
            changed = changed or kind != " "
            self.index += 1
        if separators and not at_end and (self.index >= self.end or self.lines[self.index].startswith("*** ")):
            # Empty lines before the next file's section separate the sections; they are not context.
            del old[len(old) - separators:], new[len(new) - separators:]
        if not old and not new:
            raise self.error("the hunk has no lines.", start)
        if not changed:
            raise self.error("the hunk only has context lines: mark the lines to remove with '-' and the "
                             "lines to add with '+'.", start)
        return Hunk(number, start + 1, tuple(anchors), tuple(old), tuple(new), at_end)

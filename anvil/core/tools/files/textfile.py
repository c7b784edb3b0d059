"""Reading and writing text files faithfully, and diffing them.

A file is decoded into a :class:`TextDocument`: its text with line endings normalised to ``\\n`` (what the
model reads and edits) plus the :class:`TextFormat` needed to write it back exactly as it was stored:
encoding, byte-order mark and line-ending style. Files whose line endings are mixed keep the original text
too, so that lines an edit did not touch keep their own endings.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import secrets
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: How much of a file's head is inspected for NUL bytes (the same heuristic as git and grep).
BINARY_SNIFF_BYTES = 8192

# Longest BOMs first: the UTF-32-LE mark starts with the UTF-16-LE one.
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class BinaryFileError(ValueError):
    """The bytes are not text (a NUL byte near the start and no UTF-16/32 byte-order mark)."""


class UnencodableTextError(ValueError):
    """The new text holds a character the file's encoding cannot store."""

    def __init__(self, char: str, encoding: str, line: int) -> None:
        self.char = char
        self.encoding = encoding
        self.line = line
        super().__init__(f"{char!r} (U+{ord(char):04X}) on line {line} cannot be stored in {encoding}")


@dataclass(frozen=True)
class TextFormat:
    """How a text file is stored on disk."""

    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"
    mixed_newlines: bool = False


@dataclass(frozen=True)
class TextDocument:
    """A decoded text file: ``text`` uses ``\\n`` line endings whatever the file uses."""

    text: str
    format: TextFormat
    #: The decoded text before newline normalisation; kept only when the endings are mixed.
    original_text: str | None = None

    @property
    def final_newline(self) -> bool:
        return self.text.endswith("\n")

    def encode(self, new_text: str) -> bytes:
        """``new_text`` (``\\n`` endings) as bytes in this document's format."""
        return encode_text(new_text, self.format, self.original_text)


def normalise_newlines(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> list[str]:
    """Lines without their endings; a final newline does not start another line."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def detect_newline(text: str) -> tuple[str, bool]:
    """The dominant line ending of ``text`` and whether several kinds occur. Ties favour LF, then CRLF."""
    if "\r" not in text:  # the common case, answered by one fast scan instead of three counts
        return "\n", False
    crlf = text.count("\r\n")
    lone_cr = text.count("\r") - crlf
    lone_lf = text.count("\n") - crlf
    counts = {"\n": lone_lf, "\r\n": crlf, "\r": lone_cr}
    kinds = sum(1 for n in counts.values() if n)
    if kinds == 0:
        return "\n", False
    dominant = max(counts, key=lambda nl: counts[nl])  # dict order breaks ties: LF, CRLF, CR
    return dominant, kinds > 1


def decode_text(data: bytes) -> TextDocument:
    """Decode file bytes; raises :class:`BinaryFileError` for binary content.

    A byte-order mark decides the encoding; otherwise UTF-8, and latin-1 only when the bytes are not
    valid UTF-8 (latin-1 maps every byte to a character, so such files still round-trip unchanged).
    """
    encoding, bom = "utf-8", b""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            encoding, bom = codec, mark
            break
    if not bom and looks_binary(data):
        raise BinaryFileError("the file contains NUL bytes near its start")
    body = data[len(bom):]
    try:
        raw = body.decode(encoding)
    except UnicodeDecodeError as exc:
        if bom:
            message = f"the file starts with a {encoding} byte-order mark but is not valid {encoding}"
            raise BinaryFileError(message) from exc
        encoding, raw = "latin-1", body.decode("latin-1")
    newline, mixed = detect_newline(raw)
    fmt = TextFormat(encoding=encoding, bom=bom, newline=newline, mixed_newlines=mixed)
    return TextDocument(text=normalise_newlines(raw), format=fmt, original_text=raw if mixed else None)


def stream_encoding(head: bytes) -> str | None:
    """The codec for reading a file incrementally from its first bytes; None when they look binary.

    Python's ``utf-8-sig``/``utf-16``/``utf-32`` codecs consume the byte-order mark themselves.
    """
    for mark, codec in _BOMS:
        if head.startswith(mark):
            return "utf-8-sig" if codec == "utf-8" else codec.rsplit("-", 1)[0]  # "utf-16-le" -> "utf-16"
    if looks_binary(head):
        return None
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not merely a multi-byte character cut by the end of the head
            return "latin-1"
    return "utf-8"


def document_for_new_text(text: str) -> TextDocument:
    """A document for content that has no file yet: UTF-8, with the content's own dominant line ending."""
    newline, _ = detect_newline(text)
    return TextDocument(text=normalise_newlines(text), format=TextFormat(newline=newline))


def encode_text(text: str, fmt: TextFormat, original_text: str | None = None) -> bytes:
    """Encode ``\\n``-normalised ``text`` in ``fmt``.

    With ``original_text`` (a file with mixed endings), lines outside the changed middle keep the ending
    they had; changed lines get the dominant one. Raises :class:`UnencodableTextError`.
    """
    if original_text is not None:
        stored = _restore_mixed_endings(text, original_text, fmt.newline)
    else:
        stored = text if fmt.newline == "\n" else text.replace("\n", fmt.newline)
    try:
        return fmt.bom + stored.encode(fmt.encoding)
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        line = len(_LINE_BREAK.findall(stored, 0, exc.start)) + 1
        raise UnencodableTextError(char, fmt.encoding, line) from exc


def _restore_mixed_endings(text: str, original: str, dominant: str) -> str:
    # Lines are paired from the start and from the end while their content is unchanged; those keep
    # their original ending. This is cheap (no diff) and exact for the usual single-region edit.
    old_contents, old_endings = _LINE_BREAK.split(original), _LINE_BREAK.findall(original)
    new_contents = text.split("\n")
    new_endings = [dominant] * (len(new_contents) - 1)
    limit = min(len(old_endings), len(new_endings))
    head = 0
    while head < limit and old_contents[head] == new_contents[head]:
        new_endings[head] = old_endings[head]
        head += 1
    tail = 1  # the pieces after the last line break are compared first
    while tail <= limit - head and old_contents[-tail] == new_contents[-tail]:
        new_endings[-tail] = old_endings[-tail]
        tail += 1
    pieces = []
    for content, ending in zip(new_contents, new_endings, strict=False):
        pieces.append(content)
        pieces.append(ending)
    pieces.append(new_contents[-1])
    return "".join(pieces)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path``'s content with ``data`` so that readers see the old or the new file, never half.

    The bytes go to a temporary file in the same directory (same filesystem, so ``os.replace`` is an
    atomic rename), which takes the original's permission bits and, where allowed, its owner.
    A file with several hard links is rewritten in place instead: renaming over it would cut this
    name off from the others.
    """
    try:
        existing: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        existing = None
    if existing is not None and existing.st_nlink > 1:
        with open(path, "r+b") as handle:
            handle.write(data)
            handle.truncate()
            handle.flush()
            os.fsync(handle.fileno())
        return
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.anvil-tmp")
    # 0o666 lets the umask decide a new file's mode, exactly as a plain open() would.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # the rename must not land before the data does
        if existing is not None:
            os.chmod(temp, stat.S_IMODE(existing.st_mode))
            if hasattr(os, "chown"):
                with contextlib.suppress(OSError):  # only root may give a file away; others keep theirs
                    os.chown(temp, existing.st_uid, existing.st_gid)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def unified_diff(before: str, after: str, label: str, *, new_file: bool = False, context: int = 3) -> str:
    """A unified diff (``a/label`` → ``b/label``, or from ``/dev/null``) of two ``\\n`` texts.

    The common head and tail are cut away before difflib runs, so a one-line change in a 10 MB file
    costs a few string comparisons rather than a sequence match over every line.
    """
    if before == after:
        return ""
    prefix = _common_prefix_len(before, after)
    suffix = _common_suffix_len(before, after, min(len(before), len(after)) - prefix)
    start = before.rfind("\n", 0, prefix) + 1  # the differing region starts on a line boundary...
    common_tail = before[len(before) - suffix:]
    cut = common_tail.find("\n")
    suffix = 0 if cut < 0 else suffix - (cut + 1)  # ...and ends on one
    for _ in range(context):
        if start == 0:
            break
        start = before.rfind("\n", 0, start - 1) + 1
    tail_start = len(before) - suffix
    for _ in range(context):
        if suffix == 0:
            break
        next_break = before.find("\n", tail_start)
        consumed = (next_break + 1 if next_break >= 0 else len(before)) - tail_start
        tail_start += consumed
        suffix -= consumed
    first_line = before.count("\n", 0, start)
    old_chunk = _lines_keepends(before[start:len(before) - suffix])
    new_chunk = _lines_keepends(after[start:len(after) - suffix])
    label = label.lstrip("/")  # a file in an allowed directory outside the project has an absolute path
    from_label = "/dev/null" if new_file else f"a/{label}"
    lines = [f"--- {from_label}\n", f"+++ b/{label}\n"]
    for line in list(difflib.unified_diff(old_chunk, new_chunk, n=context))[2:]:
        if line.startswith("@@"):
            line = _shift_hunk_header(line, first_line)
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


#: A changed range of lines, 0-based and half-open: before[old_start:old_end] became after[new_start:new_end].
LineChange = tuple[int, int, int, int]


def unified_diff_of_changes(before: str, after: str, label: str, changes: Sequence[LineChange],
                            context: int = 3) -> str:
    """The unified diff of ``before`` → ``after`` when the changed ranges are known (apply_patch's hunks, in
    order, not overlapping): the lines around each change are diffed on their own, so the cost follows the
    changes rather than the distance between them."""
    if before == after:
        return ""
    merged: list[LineChange] = []
    for change in changes:
        if merged and change[0] - merged[-1][1] <= 2 * context:  # close enough to share context: one hunk
            merged[-1] = (merged[-1][0], change[1], merged[-1][2], change[3])
        else:
            merged.append(change)
    old_lines, new_lines = _LineCursor(before), _LineCursor(after)
    out = [f"--- a/{label.lstrip('/')}\n", f"+++ b/{label.lstrip('/')}\n"]
    for old_start, old_end, new_start, new_end in merged:
        first = max(0, old_start - context)
        old_chunk = old_lines.take(first, old_end + context)
        new_first = new_start - (old_start - first)
        new_chunk = new_lines.take(new_first, new_end + context)
        for line in list(difflib.unified_diff(old_chunk, new_chunk, n=context))[2:]:
            if line.startswith("@@"):
                line = _shift_hunk_header(line, first, new_first)
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


class _LineCursor:
    """Lines of a text by index, found by walking forward from the last place asked for (no whole split)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.line = self.offset = 0

    def _seek(self, line: int) -> int:
        if line < self.line:
            self.line = self.offset = 0
        if line > self.line:
            rest = self.text[self.offset:]
            pieces = rest.split("\n", line - self.line)  # C speed; only the last piece is long
            self.offset += len(rest) - len(pieces[-1]) if len(pieces) > line - self.line else len(rest)
            self.line = line
        return self.offset

    def take(self, first: int, end: int) -> list[str]:
        start = self._seek(first)
        return _lines_keepends(self.text[start:self._seek(end)])


def diff_stats(diff: str) -> tuple[int, int]:
    """(lines added, lines removed) in a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


_LINE_WITH_END = re.compile(r"[^\n]*\n|[^\n]+$")


def _lines_keepends(text: str) -> list[str]:
    # Not str.splitlines: that also breaks on \f, \v, \x85, \u2028...; a diff must break on \n only.
    return _LINE_WITH_END.findall(text)


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _shift_hunk_header(header: str, offset: int, new_offset: int | None = None) -> str:
    def shift(match: re.Match[str]) -> str:
        old_start, old_len, new_start, new_len = match.groups()
        return (f"@@ -{int(old_start) + offset}{old_len or ''} "
                f"+{int(new_start) + (offset if new_offset is None else new_offset)}{new_len or ''} @@")

    return _HUNK.sub(shift, header, count=1)


_CHUNK = 1 << 16


def _common_prefix_len(a: str, b: str) -> int:
    # Chunked slice comparison (memcmp speed), then a binary search inside the first differing chunk.
    limit = min(len(a), len(b))
    low = 0
    while low < limit:
        high = min(low + _CHUNK, limit)
        if a[low:high] == b[low:high]:
            low = high
            continue
        while high - low > 1:
            mid = (low + high) // 2
            if a[low:mid] == b[low:mid]:
                low = mid
            else:
                high = mid
        return low
    return limit


def _common_suffix_len(a: str, b: str, limit: int) -> int:
    la, lb = len(a), len(b)
    low = 0
    while low < limit:
        high = min(low + _CHUNK, limit)
        if a[la - high:la - low] == b[lb - high:lb - low]:
            low = high
            continue
        while high - low > 1:
            mid = (low + high) // 2
            if a[la - mid:la - low] == b[lb - mid:lb - low]:
                low = mid
            else:
                high = mid
        return low
    return limit

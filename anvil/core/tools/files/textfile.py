"""Reading and writing text files faithfully, and diffing them.

A file is decoded into a :class:`TextDocument`: its text with line endings normalised to ``\\n`` (what the
model reads and edits) plus the :class:`TextFormat` needed to write it back exactly as it was stored:
encoding, byte-order mark and line-ending style. Files whose line endings are mixed keep the original text
too, so that lines an edit did not touch keep their own endings; UTF-8 files with a few invalid bytes keep
them the same way (:mod:`anvil.core.tools.files.stray_bytes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from anvil.core.tools.files.stray_bytes import (
    SURROGATE,
    decode_with_stray_bytes,
    restore_stray_bytes,
    shown,
    stray_lines,
)

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
    #: UTF-8 with bytes that are not UTF-8, kept as they are (surrogate escapes)
    stray_bytes: bool = False


@dataclass(frozen=True)
class TextDocument:
    """A decoded text file: ``text`` uses ``\\n`` line endings whatever the file uses."""

    text: str
    format: TextFormat
    #: The decoded text before newline normalisation; kept only when the endings are mixed.
    original_text: str | None = None
    #: For a UTF-8 file with stray bytes: ``text`` with those bytes as surrogate escapes (``text`` shows U+FFFD).
    escaped_text: str | None = None

    @property
    def final_newline(self) -> bool:
        return self.text.endswith("\n")

    def stray_bytes(self) -> tuple[int, list[int]]:
        """How many bytes of the file are not valid UTF-8, and on which lines (none unless ``format.stray_bytes``)."""
        return stray_lines(self.escaped_text) if self.escaped_text is not None else (0, [])

    def encode(self, new_text: str) -> bytes:
        """``new_text`` (``\\n`` endings) as bytes in this document's format."""
        if self.escaped_text is not None:
            surrogate = SURROGATE.search(new_text)
            if surrogate:  # only the file's own stray bytes may be written as they are, never the model's
                line = new_text.count("\n", 0, surrogate.start()) + 1
                raise UnencodableTextError(surrogate.group(), self.format.encoding, line)
            new_text = restore_stray_bytes(new_text, self.text, self.escaped_text)
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

    A byte-order mark decides the encoding; otherwise UTF-8. Bytes that are not valid UTF-8 are kept as they
    are (:mod:`~anvil.core.tools.files.stray_bytes`) when the rest is UTF-8 with at least one multi-byte
    character; without one the file is latin-1 (which maps every byte to a character, so it round-trips).
    """
    encoding, bom = "utf-8", b""
    for mark, codec in _BOMS:
        if data.startswith(mark):
            encoding, bom = codec, mark
            break
    if bom and encoding != "utf-8" and not looks_binary(data):
        try:  # UTF-16/32 text is full of NULs; without them the "mark" is two stray bytes of an 8-bit file
            data[len(bom):].decode(encoding)
        except UnicodeDecodeError:
            encoding, bom = "utf-8", b""
    if not bom and looks_binary(data):
        raise BinaryFileError("the file contains NUL bytes near its start")
    body = data[len(bom):]
    escaped: str | None = None
    try:
        raw = body.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding == "utf-8":
            escaped = decode_with_stray_bytes(body, declared=bool(bom))
        if escaped is None and bom:
            message = f"the file starts with a {encoding} byte-order mark but is not valid {encoding}"
            raise BinaryFileError(message) from exc
        encoding, raw = ("utf-8", escaped) if escaped is not None else ("latin-1", body.decode("latin-1"))
    newline, mixed = detect_newline(raw)
    fmt = TextFormat(encoding=encoding, bom=bom, newline=newline, mixed_newlines=mixed,
                     stray_bytes=escaped is not None)
    text = normalise_newlines(raw)
    if escaped is None:
        return TextDocument(text=text, format=fmt, original_text=raw if mixed else None)
    return TextDocument(text=shown(text), format=fmt, original_text=raw if mixed else None, escaped_text=text)


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
        # Not merely a multi-byte character cut by the end of the head, and no UTF-8 around the bad bytes.
        if exc.start < len(head) - 3 and decode_with_stray_bytes(head) is None:
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
        return fmt.bom + stored.encode(fmt.encoding, "surrogateescape" if fmt.stray_bytes else "strict")
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

"""UTF-8 files with a few bytes that are not UTF-8: shown with U+FFFD, written back with those bytes intact.

Such a file (a stray latin-1 byte in a UTF-8 file, a multi-byte character cut in half) is decoded with
Python's ``surrogateescape``: each invalid byte becomes a lone surrogate (U+DC80..U+DCFF) that encodes back to
the same byte. The model can neither read nor send lone surrogates, so it is shown U+FFFD in their place. When
new text comes back, the characters the model left alone get their original bytes again (found by aligning the
new text with what was shown), and everything it wrote is stored as UTF-8.

A file is read this way only when it has at least one valid multi-byte UTF-8 character: bytes above 0x7F that
never form one are a legacy 8-bit encoding (latin-1), which is decoded as such.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

from anvil.core.tools.files.textdiff import common_prefix_len, common_suffix_len, lines_keepends

#: a byte that is not UTF-8, as ``surrogateescape`` decodes it
STRAY = re.compile("[\udc80-\udcff]")
#: any lone surrogate, which no UTF-8 text can hold
SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
_SHOWN = {code: REPLACEMENT for code in range(0xDC80, 0xDD00)}
_NON_ASCII_TEXT = re.compile("[^\x00-\x7f\udc80-\udcff]")
#: changed blocks bigger than this (characters) are not aligned character by character: their U+FFFD stay U+FFFD
CHAR_ALIGN_LIMIT = 20_000


def decode_with_stray_bytes(body: bytes, *, declared: bool = False) -> str | None:
    """``body`` as UTF-8 with its invalid bytes kept as surrogate escapes; None when it does not look like UTF-8
    at all (no valid multi-byte character), unless a byte-order mark ``declared`` it UTF-8."""
    text = body.decode("utf-8", "surrogateescape")
    return text if declared or _NON_ASCII_TEXT.search(text) else None


def shown(text: str) -> str:
    """``text`` as the model sees it: each stray byte as U+FFFD (the same length, position for position)."""
    return text.translate(_SHOWN)


def stray_lines(text: str) -> tuple[int, list[int]]:
    """How many stray bytes ``text`` (``\\n`` line endings) holds, and the 1-based lines they are on."""
    count, lines, line, position = 0, [], 1, 0
    for match in STRAY.finditer(text):
        line += text.count("\n", position, match.start())
        position = match.start()
        count += 1
        if not lines or lines[-1] != line:
            lines.append(line)
    return count, lines


def restore_stray_bytes(new: str, view: str, escaped: str) -> str:
    """``new`` (edited from ``view``, the shown form of ``escaped``) with the stray bytes it kept put back."""
    if new == view:
        return escaped
    prefix = common_prefix_len(new, view)
    suffix = common_suffix_len(new, view, min(len(new), len(view)) - prefix)
    head, tail = escaped[:prefix], escaped[len(escaped) - suffix:]
    middle_new = new[prefix:len(new) - suffix]
    middle_escaped = escaped[prefix:len(escaped) - suffix]
    if REPLACEMENT not in middle_new or not STRAY.search(middle_escaped):
        return head + middle_new + tail
    return head + _align_lines(middle_new, view[prefix:len(view) - suffix], middle_escaped) + tail


def _align_lines(new: str, view: str, escaped: str) -> str:
    view_lines, escaped_lines, new_lines = lines_keepends(view), lines_keepends(escaped), lines_keepends(new)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, view_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            out.extend(escaped_lines[i1:i2])
        elif tag == "replace":
            out.append(_align_chars("".join(new_lines[j1:j2]), "".join(view_lines[i1:i2]),
                                    "".join(escaped_lines[i1:i2])))
        elif tag == "insert":
            out.extend(new_lines[j1:j2])
    return "".join(out)


def _align_chars(new: str, view: str, escaped: str) -> str:
    if REPLACEMENT not in new or not STRAY.search(escaped) or len(new) + len(view) > CHAR_ALIGN_LIMIT:
        return new
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, view, new, autojunk=False).get_opcodes():
        out.append(escaped[i1:i2] if tag == "equal" else new[j1:j2])
    return "".join(out)

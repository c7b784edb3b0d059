"""What models send around the text they mean: blank lines at the ends of old_string, and strings escaped
once too often. Pure string functions for the matching chain (:mod:`match`).
"""

from __future__ import annotations

import re


def _blank_ends(lines: list[str]) -> tuple[int, int, int] | None:
    """(blank lines before the first non-blank line, index of the last non-blank line, blank lines after
    it) of text split on newlines; None when every line is blank. A final empty piece (the text ends with a
    newline) is that newline, not a blank line."""
    filled = [index for index, line in enumerate(lines) if line.strip()]
    if not filled:
        return None
    after = len(lines) - 1 - filled[-1]
    return filled[0], filled[-1], after - 1 if after and lines[-1] == "" else after


def without_extra_blank_lines(old: str, new: str) -> tuple[str, str]:
    """old_string without its leading and trailing blank lines, and new_string without as many of its own:
    blank lines that the file lacks at that place and that new_string keeps are not part of the edit, and
    dropping the same count from both keeps the file's own blank lines as they are."""
    old_lines, new_lines = old.split("\n"), new.split("\n")
    old_ends, new_ends = _blank_ends(old_lines), _blank_ends(new_lines)
    if old_ends is None or (old_ends[0] == 0 and old_ends[2] == 0):
        return old, new
    lead, last, trail = old_ends
    trimmed_old = "\n".join(old_lines[lead:last + 1]) + ("\n" if last < len(old_lines) - 1 else "")
    if new_ends is None:
        return trimmed_old, new
    new_lead, new_last, new_trail = new_ends
    drop_lead, drop_trail = min(lead, new_lead), min(trail, new_trail)
    if drop_trail:
        kept = new_lines[drop_lead:new_last + 1 + new_trail - drop_trail]
        return trimmed_old, "\n".join(kept) + "\n"
    return trimmed_old, "\n".join(new_lines[drop_lead:])


_ESCAPE = re.compile(r"\\([\"'\\nt`])")
_ESCAPED = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t", "`": "`"}


def unescape(text: str) -> str:
    return _ESCAPE.sub(lambda match: _ESCAPED[match.group(1)], text)

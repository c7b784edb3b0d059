"""Unified diffs of two texts, fast on large files with small changes.

The common head and tail are cut away before difflib runs; the same prefix and suffix search serves the
encoders that keep untouched bytes of a file exactly as they were.
"""

from __future__ import annotations

import difflib
import re


def unified_diff(before: str, after: str, label: str, *, new_file: bool = False, context: int = 3) -> str:
    """A unified diff (``a/label`` → ``b/label``, or from ``/dev/null``) of two ``\\n`` texts.

    The common head and tail are cut away before difflib runs, so a one-line change in a 10 MB file
    costs a few string comparisons rather than a sequence match over every line.
    """
    if before == after:
        return ""
    prefix = common_prefix_len(before, after)
    suffix = common_suffix_len(before, after, min(len(before), len(after)) - prefix)
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
    old_chunk = lines_keepends(before[start:len(before) - suffix])
    new_chunk = lines_keepends(after[start:len(after) - suffix])
    label = label.lstrip("/")  # a file in an allowed directory outside the project has an absolute path
    from_label = "/dev/null" if new_file else f"a/{label}"
    lines = [f"--- {from_label}\n", f"+++ b/{label}\n"]
    for line in list(difflib.unified_diff(old_chunk, new_chunk, n=context))[2:]:
        if line.startswith("@@"):
            line = _shift_hunk_header(line, first_line)
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


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


def lines_keepends(text: str) -> list[str]:
    # Not str.splitlines: that also breaks on \f, \v, \x85, \u2028...; a diff must break on \n only.
    return _LINE_WITH_END.findall(text)


_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _shift_hunk_header(header: str, offset: int) -> str:
    def shift(match: re.Match[str]) -> str:
        old_start, old_len, new_start, new_len = match.groups()
        return (f"@@ -{int(old_start) + offset}{old_len or ''} "
                f"+{int(new_start) + offset}{new_len or ''} @@")

    return _HUNK.sub(shift, header, count=1)


_CHUNK = 1 << 16


def common_prefix_len(a: str, b: str) -> int:
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


def common_suffix_len(a: str, b: str, limit: int) -> int:
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

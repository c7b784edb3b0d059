"""The line-block steps of the edit chain: indentation-agnostic and fuzzy matching, and the closest region.

These compare old_string with the file line by line rather than character by character. Fuzzy matching
scores candidate blocks with rapidfuzz; on large files it only looks near the lines most similar to
old_string's first, last and longest lines, so it stays fast on a 10 MB file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from rapidfuzz import fuzz, process
from rapidfuzz.distance import LCSseq

from anvil.core.tools.edit.edit_data import (
    ANCHOR_CUTOFF,
    ANCHOR_HITS,
    FUZZY_MARGIN,
    FUZZY_MIN_LINES,
    FUZZY_THRESHOLD,
    TAB_WIDTH,
    EditFailed,
    LineRange,
    Region,
    _Lines,
    _Span,
)

# --- line-block steps: indentation and fuzzy --------------------------------------------------------


def _block_lines(old: str) -> tuple[list[str], bool]:
    """old_string as lines, and whether it ends with a newline (then the match includes it)."""
    lines = old.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        return lines[:-1], True
    return lines, False


def _indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _width(indent: str) -> int:
    width = 0
    for char in indent:
        width = (width // TAB_WIDTH + 1) * TAB_WIDTH if char == "\t" else width + 1
    return width


@dataclass(frozen=True)
class _Reindent:
    """How old_string's indentation maps onto the file's: file = file_base + (old - old_base) * scale."""

    old_base: str
    file_base: str
    scale: Fraction
    use_tabs: bool | None  # None: the file block shows no indentation style

    def apply(self, line: str) -> str:
        if not line.strip():
            return ""
        indent = _indent(line)
        body = line[len(indent):]
        rest = indent[len(self.old_base):]
        same_style = not rest or self.use_tabs is None or set(rest) == ({"\t"} if self.use_tabs else {" "})
        if self.scale == 1 and indent.startswith(self.old_base) and same_style:
            return self.file_base + rest + body  # keep the exact characters when no conversion is needed
        width = _width(self.file_base) + (_width(indent) - _width(self.old_base)) * self.scale
        width = max(0, round(width))
        if self.use_tabs:
            return "\t" * (width // TAB_WIDTH) + " " * (width % TAB_WIDTH) + body
        return " " * width + body


def _uniform_reindent(old_lines: list[str], file_lines: list[str]) -> _Reindent | None:
    """The mapping when every non-blank line is shifted by the same offset (or scaled by the same
    factor, for a block written with another indent unit); None when the shift is not uniform."""
    pairs = [(_indent(o), _indent(f)) for o, f in zip(old_lines, file_lines, strict=True) if o.strip()]
    base_old, base_file = min(pairs, key=lambda pair: _width(pair[0]))
    old_zero, file_zero = _width(base_old), _width(base_file)
    scale: Fraction | None = None
    for old_indent, file_indent in pairs:
        old_delta, file_delta = _width(old_indent) - old_zero, _width(file_indent) - file_zero
        if old_delta == 0 or file_delta <= 0:
            if old_delta != file_delta:
                return None
            continue
        ratio = Fraction(file_delta, old_delta)
        if scale is not None and ratio != scale:
            return None
        scale = ratio
    return _Reindent(base_old, base_file, scale or Fraction(1), _tab_style([f for _, f in pairs]))


def _tab_style(indents: list[str]) -> bool | None:
    if any("\t" in indent for indent in indents):
        return True
    return False if any(indents) else None


def _indentation_spans(old: str, new: str, lines: _Lines, overlap: bool) -> list[_Span]:
    old_lines, with_newline = _block_lines(old)
    keys = [line.strip() for line in old_lines]
    anchor = next(i for i, key in enumerate(keys) if key)
    spans: list[_Span] = []
    taken_until = 0
    for line_no, key in enumerate(lines.stripped):
        start = line_no - anchor
        if key != keys[anchor] or start < taken_until or start + len(keys) > lines.count:
            continue
        block = lines.lines[start:start + len(keys)]
        if any(line.strip() != wanted for line, wanted in zip(block, keys, strict=True)):
            continue
        mapping = _uniform_reindent(old_lines, block)
        if mapping is not None:
            spans.append(_block_span(lines, start, len(keys), with_newline, mapping, new))
            taken_until = start + (1 if overlap else len(keys))
    return spans


def _block_span(lines: _Lines, start: int, size: int, with_newline: bool, mapping: _Reindent, new: str,
                similarity: float = 1.0) -> _Span:
    """Whole lines ``start``..``start+size`` replaced by ``new`` re-indented to the file's indentation."""
    first, end = lines.span(start, size, with_newline)
    replacement = "\n".join(mapping.apply(line) for line in new.split("\n"))
    if with_newline and end == len(lines.text) and not lines.text.endswith("\n"):
        replacement = replacement.removesuffix("\n")  # the file had no final newline: keep it that way
    return _Span(first, end, replacement, similarity)


@dataclass(frozen=True)
class _Window:
    start: int  # 0-based line
    size: int
    score: float

    def overlaps(self, other: _Window) -> bool:
        return self.start < other.start + other.size and other.start < self.start + self.size


def _score_windows(old_lines: list[str], lines: _Lines, sizes: Sequence[int], cutoff: float,
                   hits: int) -> list[_Window]:
    keys = [line.strip() for line in old_lines]
    old_key = "\n".join(keys)
    filled = [i for i, key in enumerate(keys) if key]
    anchors = {filled[0], filled[-1], max(filled, key=lambda i: len(keys[i]))}
    anchor_cutoff = ANCHOR_CUTOFF if cutoff > 0 else 0.0
    candidates: set[tuple[int, int]] = set()
    for offset in anchors:
        for _, _, line_no in process.extract(keys[offset], lines.stripped, scorer=fuzz.ratio, limit=hits,
                                             score_cutoff=anchor_cutoff):
            for size in sizes:
                # The anchor sits `offset` lines in; extra or missing lines may fall before or after it.
                for start in {line_no - offset, line_no - offset - (size - len(keys))}:
                    if start >= 0 and start + size <= lines.count and size > 0:
                        candidates.add((start, size))
    windows = []
    for start, size in candidates:
        score = fuzz.ratio(old_key, "\n".join(lines.stripped[start:start + size]), score_cutoff=cutoff * 100)
        if score:
            windows.append(_Window(start, size, score / 100))
    return windows


def _fuzzy_spans(old: str, new: str, lines: _Lines) -> list[_Span] | EditFailed:
    old_lines, with_newline = _block_lines(old)
    if sum(1 for line in old_lines if line.strip()) < FUZZY_MIN_LINES:
        return []
    k = len(old_lines)
    windows = _score_windows(old_lines, lines, (k - 1, k, k + 1), FUZZY_THRESHOLD - FUZZY_MARGIN, ANCHOR_HITS)
    if not windows:
        return []
    # The best window of each group of overlapping ones (shifted or resized variants of one place),
    # preferring the larger score, then old_string's own line count.
    places: list[_Window] = []
    for window in sorted(windows, key=lambda w: (w.score, w.size == k), reverse=True):
        if not any(window.overlaps(place) for place in places):
            places.append(window)
    best = places[0]
    if best.score < FUZZY_THRESHOLD:
        return []
    rivals = [place for place in places[1:] if place.score >= best.score - FUZZY_MARGIN]
    if rivals:
        places = sorted([best, *rivals], key=lambda w: w.start)
        ranges = tuple(LineRange(w.start + 1, w.start + w.size) for w in places)
        listed = ", ".join(f"{r.label()} (similarity {w.score:.2f})" for r, w in zip(ranges, places, strict=True))
        return EditFailed("ambiguous_fuzzy", "old_string was not found exactly, and several places are about "
                          f"equally similar to it: {listed}. Copy the exact text from the file (read_file) "
                          "with enough surrounding lines to be unique.", ranges)
    # Lines do not pair up one to one here, so only the base indentation is carried over.
    old_indents = [_indent(line) for line in old_lines if line.strip()]
    file_indents = [_indent(line) for line in lines.lines[best.start:best.start + best.size] if line.strip()]
    mapping = _Reindent(min(old_indents, key=_width), min(file_indents or [""], key=_width), Fraction(1),
                        _tab_style(file_indents))
    return [_block_span(lines, best.start, best.size, with_newline, mapping, new, best.score)]


def _closest_region(old: str, lines: _Lines) -> Region | None:
    old_lines, _ = _block_lines(old)
    if not any(line.strip() for line in old_lines) or not lines.text:
        return None
    if len(old_lines) == 1:
        # A one-line old_string is often a fragment of a longer line. partial_ratio finds the line holding
        # it but is slow over a whole file, so the longest-common-subsequence score (fast, and maximal for
        # any line containing the fragment) picks the lines that partial_ratio then ranks.
        key = old_lines[0].strip()
        hits = process.extract(key, lines.stripped, scorer=LCSseq.similarity, limit=ANCHOR_HITS)
        if not hits:
            return None
        similarity, line_no = max(((fuzz.partial_ratio(key, choice) / 100, line_no)
                                   for choice, _, line_no in hits), key=lambda hit: (hit[0], -hit[1]))
        return Region(LineRange(line_no + 1, line_no + 1), lines.lines[line_no], similarity)
    windows = _score_windows(old_lines, lines, (len(old_lines),), 0.0, 10)
    if not windows:
        return None
    best = max(windows, key=lambda w: (w.score, -w.start))
    text = "\n".join(lines.lines[best.start:best.start + best.size])
    return Region(LineRange(best.start + 1, best.start + best.size), text, best.score)

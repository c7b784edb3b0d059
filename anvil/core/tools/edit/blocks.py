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
    EditFailed,
    LineRange,
    Region,
    Scope,
    _Lines,
    _Span,
    similarity_label,
)
from anvil.core.tools.edit.indentation import Reindent, UniformReindent, block_reindent, indent_of, tab_style, width_of

# --- line-block steps: indentation and fuzzy --------------------------------------------------------


def _block_lines(old: str) -> tuple[list[str], bool]:
    """old_string as lines, and whether it ends with a newline (then the match includes it)."""
    lines = old.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        return lines[:-1], True
    return lines, False


@dataclass(frozen=True)
class Unmapped:
    """A block that equals old_string once lines are stripped, but whose indentation cannot be carried over."""

    lines: LineRange
    reason: str


def _indentation_spans(old: str, new: str, lines: _Lines, overlap: bool, scope: Scope | None,
                       unmapped: list[Unmapped]) -> list[_Span]:
    """Blocks equal to old_string line by line once leading whitespace is ignored, with new_string
    re-indented to each (see :mod:`indentation`). Blocks whose indentation cannot be mapped are left out
    and listed in ``unmapped``, so that the chain can refuse them if nothing else matches."""
    old_lines, with_newline = _block_lines(old)
    keys = [line.strip() for line in old_lines]
    anchor = next(i for i, key in enumerate(keys) if key)
    spans: list[_Span] = []
    taken_until = 0
    for line_no, key in enumerate(lines.stripped):
        start = line_no - anchor
        if key != keys[anchor] or start < taken_until or start + len(keys) > lines.count:
            continue
        if scope is not None and not scope.allows(start, len(keys)):
            continue
        block = lines.lines[start:start + len(keys)]
        if any(line.strip() != wanted for line, wanted in zip(block, keys, strict=True)):
            continue
        mapping = block_reindent(old_lines, block, start + 1)
        span = mapping if isinstance(mapping, str) else _block_span(lines, start, len(keys), with_newline,
                                                                    mapping, new)
        if isinstance(span, str):
            unmapped.append(Unmapped(LineRange(start + 1, start + len(keys)), span))
            continue
        spans.append(span)
        taken_until = start + (1 if overlap else len(keys))
    return spans


def _indentation_refusal(unmapped: list[Unmapped], lines: _Lines) -> EditFailed | None:
    if not unmapped:
        return None
    first = unmapped[0]
    places = ", ".join(block.lines.label() for block in unmapped)
    text = "\n".join(lines.lines[first.lines.first - 1:first.lines.last])
    return EditFailed("indentation", f"old_string matches {places} only when indentation is ignored, and its "
                      f"indentation does not carry over to the file's: {first.reason}. Re-indenting new_string "
                      "would be a guess about the nesting, so nothing was changed. Copy old_string with the "
                      "file's exact indentation (read_file shows it) and write new_string to match.",
                      tuple(block.lines for block in unmapped), Region(first.lines, text, 1.0))


def _block_span(lines: _Lines, start: int, size: int, with_newline: bool, mapping: Reindent, new: str,
                similarity: float = 1.0) -> _Span | str:
    """Whole lines ``start``..``start+size`` replaced by ``new`` re-indented to the file's indentation, or
    why a line of new_string has no certain indentation there."""
    first, end = lines.span(start, size, with_newline)
    out = []
    for number, line in enumerate(new.split("\n"), 1):
        mapped = mapping.apply(line)
        if mapped is None:
            return (f"new_string line {number} is indented between two levels that old_string uses, and the "
                    "file's indentation for those levels leaves it no certain place")
        out.append(mapped)
    replacement = "\n".join(out)
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


def _fuzzy_spans(old: str, new: str, lines: _Lines, replace_all: bool,
                 scope: Scope | None) -> list[_Span] | EditFailed:
    old_lines, with_newline = _block_lines(old)
    if sum(1 for line in old_lines if line.strip()) < FUZZY_MIN_LINES:
        return []
    k = len(old_lines)
    windows = _score_windows(old_lines, lines, (k - 1, k, k + 1), FUZZY_THRESHOLD - FUZZY_MARGIN, ANCHOR_HITS)
    windows = [w for w in windows if scope is None or scope.allows(w.start, w.size)]
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
    # Places about as similar as the best are the same text as far as fuzzy matching can tell: replace_all
    # means all of them, and without it, picking one would be a guess.
    chosen = sorted([best, *(place for place in places[1:] if place.score >= best.score - FUZZY_MARGIN)],
                    key=lambda w: w.start)
    if len(chosen) > 1 and not replace_all:
        ranges = tuple(LineRange(w.start + 1, w.start + w.size) for w in chosen)
        listed = ", ".join(f"{r.label()} ({similarity_label(w.score)})" for r, w in zip(ranges, chosen, strict=True))
        return EditFailed("ambiguous_fuzzy", "old_string was not found exactly, and several places are about "
                          f"equally similar to it: {listed}. Copy the exact text from the file (read_file) "
                          "with enough surrounding lines to be unique, or set replace_all to change them all.",
                          ranges)
    return [_fuzzy_span(old_lines, with_newline, lines, window, new) for window in chosen]


def _fuzzy_span(old_lines: list[str], with_newline: bool, lines: _Lines, window: _Window, new: str) -> _Span:
    # Lines do not pair up one to one here, so only the base indentation is carried over.
    old_indents = [indent_of(line) for line in old_lines if line.strip()]
    file_indents = [indent_of(line) for line in lines.lines[window.start:window.start + window.size]
                    if line.strip()]
    mapping = UniformReindent(min(old_indents, key=width_of), min(file_indents or [""], key=width_of), Fraction(1),
                              tab_style(file_indents))
    span = _block_span(lines, window.start, window.size, with_newline, mapping, new, window.score)
    assert not isinstance(span, str)  # a uniform mapping places every line
    return span


def _closest_region(old: str, lines: _Lines, scope: Scope | None = None) -> Region | None:
    """The part of the file most like old_string: within ``scope`` when anything there resembles it."""
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
        scored = [(fuzz.partial_ratio(key, choice) / 100, line_no) for choice, _, line_no in hits]
        inside = [hit for hit in scored if scope is not None and scope.allows(hit[1], 1)]
        similarity, line_no = max(inside or scored, key=lambda hit: (hit[0], -hit[1]))
        return Region(LineRange(line_no + 1, line_no + 1), lines.lines[line_no], similarity)
    windows = _score_windows(old_lines, lines, (len(old_lines),), 0.0, 10)
    if not windows:
        return None
    inside = [w for w in windows if scope is not None and scope.allows(w.start, w.size)]
    best = max(inside or windows, key=lambda w: (w.score, -w.start))
    text = "\n".join(lines.lines[best.start:best.start + best.size])
    return Region(LineRange(best.start + 1, best.start + best.size), text, best.score)

"""Applying an Update File's hunks to a file's text: pure, with the edit chain's tolerance and refusals.

Each hunk is an edit whose old side is its context and ``-`` lines and whose new side is its context and ``+``
lines, matched on whole lines by :func:`~anvil.core.tools.edit.match.apply_edit` (line endings, trailing
whitespace, blank lines, indentation, typography, escapes, fuzzy; placeholders and unmappable indentation
refused). Where it may match:

- after the previous hunk's change: hunks come in the order of the file;
- under its ``@@`` anchor lines, each found after the one before (a stripped line equal to the anchor, else
  one starting with it): first within the anchor's indented block, then anywhere after the anchor line;
- at the very end of the file when the hunk ends with ``*** End of File``.

It must fit exactly one place. An anchor that appears several times is fine when the hunk fits under only one
of them; otherwise the hunk is ambiguous and the error names the places. A hunk with only ``+`` lines is
inserted right after its last anchor line, or at the end of the file without one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from anvil.core.tools.edit.blocks import _closest_region
from anvil.core.tools.edit.edit_data import EditApplied, EditFailed, LineRange, Region, Scope, _Lines
from anvil.core.tools.edit.indentation import indent_of, width_of
from anvil.core.tools.edit.match import apply_edit, plain_typography
from anvil.core.tools.edit.patch_parse import Hunk
from anvil.core.tools.files.textdiff import LineChange

#: Anchor places followed at most; past this, an anchor says too little to locate anything.
MAX_ANCHOR_PLACES = 100


@dataclass(frozen=True)
class HunkFailed:
    hunk: Hunk
    message: str
    closest: Region | None = None


@dataclass(frozen=True)
class PatchedText:
    text: str
    #: how each hunk matched: a step of the edit chain, or "insert" for a hunk with only + lines
    steps: tuple[str, ...]
    #: the line ranges each hunk changed, in the text before and after (for the diff)
    changes: tuple[LineChange, ...]


@dataclass(frozen=True)
class _Place:
    """Where a hunk may match: after ``anchor`` (a 0-based line; None: no anchor), within its block first."""

    anchor: int | None
    first: int
    block_end: int
    end: int


def apply_hunks(text: str, hunks: Sequence[Hunk]) -> PatchedText | HunkFailed:
    """Apply ``hunks`` in order to ``text`` (``\\n`` line endings); a file without a final newline keeps
    that."""
    final_newline = text.endswith("\n") or not text
    work = text if final_newline else text + "\n"
    cursor = shift = 0  # where the next hunk may start; how many lines the hunks so far added
    steps: list[str] = []
    changes: list[LineChange] = []
    for hunk in hunks:
        outcome = _apply_hunk(work, hunk, cursor)
        if isinstance(outcome, HunkFailed):
            return outcome
        work, step, (start, end, delta) = outcome
        cursor = end + delta
        changes.append((start - shift, end - shift, start, end + delta))
        shift += delta
        steps.append(step)
    if not final_newline and work.endswith("\n"):
        work = work[:-1]
    return PatchedText(work, tuple(steps), tuple(changes))


def _apply_hunk(work: str, hunk: Hunk, cursor: int) -> tuple[str, str, tuple[int, int, int]] | HunkFailed:
    """The new text, how the hunk matched, and the lines it replaced (start, end) with the change in line
    count."""
    lines = _Lines(work)
    places = _anchor_places(lines, hunk, cursor)
    if isinstance(places, HunkFailed):
        return places
    if not hunk.old:
        return _insert(work, lines, hunk, places)
    old = "".join(line + "\n" for line in hunk.old)
    new = "".join(line + "\n" for line in hunk.new)
    found: dict[LineRange, tuple[EditApplied, _Place]] = {}
    misses: list[EditFailed] = []
    for wide in (False, True):
        for place in places:
            if wide and place.block_end == place.end:
                continue  # the wide search would repeat the narrow one
            end = lines.count if hunk.at_end else place.end if wide else place.block_end
            scope = Scope(place.first, end, at_end=hunk.at_end)
            outcome = apply_edit(work, old, new, scope=scope)
            if isinstance(outcome, EditApplied):
                found.setdefault(outcome.ranges[0], (outcome, place))
            elif outcome.kind == "not_found":
                misses.append(outcome)
            else:
                return _refused(hunk, outcome, cursor)
        if found:
            break
    if len(found) > 1:
        return _ambiguous_places(hunk, found)
    if not found:
        return _not_found(work, hunk, old, cursor, misses)
    outcome, _ = next(iter(found.values()))
    delta = outcome.text.count("\n") - work.count("\n")
    return outcome.text, outcome.step, (outcome.ranges[0].first - 1, outcome.ranges[0].last, delta)


def _insert(work: str, lines: _Lines, hunk: Hunk,
            places: list[_Place]) -> tuple[str, str, tuple[int, int, int]] | HunkFailed:
    if hunk.anchors and len(places) > 1:
        listed = ", ".join(str(place.anchor + 1) for place in places if place.anchor is not None)
        return HunkFailed(hunk, f"{hunk.label()}: it only adds lines, after its @@ line, and that line appears at "
                          f"lines {listed}. Add context lines (' ' lines) around the addition, or an @@ line for "
                          "the enclosing class or function, so that it fits one place only.")
    at = places[0].anchor + 1 if hunk.anchors and places[0].anchor is not None else lines.count
    offset = lines.offset(at) if at < lines.count else len(work)
    added = "".join(line + "\n" for line in hunk.new)
    return work[:offset] + added + work[offset:], "insert", (at, at, len(hunk.new))


def _anchor_places(lines: _Lines, hunk: Hunk, cursor: int) -> list[_Place] | HunkFailed:
    places = [_Place(None, cursor, lines.count, lines.count)]
    for anchor in hunk.anchors:
        following: list[_Place] = []
        for place in places:
            hits = _anchor_lines(lines, anchor, place.first, place.block_end) or \
                (_anchor_lines(lines, anchor, place.first, place.end) if place.block_end != place.end else [])
            following += [_Place(hit, hit, _block_end(lines, hit, place.end), place.end) for hit in hits]
        if not following:
            return _anchor_missing(lines, hunk, anchor, places[0].first)
        places = following[:MAX_ANCHOR_PLACES]
    return places


def _anchor_lines(lines: _Lines, anchor: str, first: int, end: int) -> list[int]:
    """Lines that the anchor names: equal once stripped, else equal in plain typography, else starting with
    it (``@@ class Foo`` for ``class Foo(Base):``)."""
    wanted = anchor.strip()
    window = range(first, min(end, lines.count))
    for same in (lambda line: line == wanted,
                 lambda line: plain_typography(line) == plain_typography(wanted),
                 lambda line: line.startswith(wanted)):
        hits = [index for index in window if same(lines.stripped[index])]
        if hits:
            return hits
    return []


def _block_end(lines: _Lines, anchor: int, limit: int) -> int:
    """The end of the anchor line's indented block (the lines after it that are indented deeper), or
    ``limit`` when nothing is (a heading, a brace-less format): then the whole rest is its place."""
    depth = width_of(indent_of(lines.lines[anchor]))
    end = anchor + 1
    for index in range(anchor + 1, limit):
        if not lines.stripped[index]:
            continue
        if width_of(indent_of(lines.lines[index])) <= depth:
            break
        end = index + 1
    return end if end > anchor + 1 else limit


def _after(cursor: int) -> str:
    return f" after line {cursor} (where the previous hunk's change ends)" if cursor else ""


def _anchor_missing(lines: _Lines, hunk: Hunk, anchor: str, first: int) -> HunkFailed:
    closest = _closest_region(anchor, lines, Scope(first))
    hint = f" The most similar line is {closest.label()}." if closest and closest.similarity >= 0.5 else ""
    return HunkFailed(hunk, f"{hunk.label()}: the @@ line '{anchor}' was not found{_after(first)}.{hint} An @@ "
                      "line must repeat a line of the file (a class or function definition) exactly, and come in "
                      "the order of the file.", closest if hint else None)


def _refused(hunk: Hunk, failure: EditFailed, cursor: int) -> HunkFailed:
    where = ", ".join(str(r) for r in failure.ranges[:10])
    if failure.kind == "ambiguous":
        message = (f"its context and - lines match {len(failure.ranges)} places{_after(cursor)}, at lines {where}. "
                   "Add context lines, or an @@ line naming the enclosing class or function, so that it matches "
                   "one place only.")
    elif failure.kind == "ambiguous_fuzzy":
        message = (f"its context and - lines were not found exactly, and several places are about equally similar "
                   f"to them: lines {where}. Copy the lines exactly from the file, with enough context to be unique.")
    elif failure.kind == "no_change":
        message = ("it changes nothing: its - lines and + lines are the same." if hunk.old == hunk.new else
                   "it changes nothing: the file already reads as its + lines there.")
    else:  # the chain's refusals (indentation, placeholders), in the patch's words
        message = re.sub(r"new_string line (\d+)", r"line \1 of its new text (context and + lines)", failure.message)
        message = message.replace("old_string", "the hunk's old text (context and - lines)", 1)
        message = message.replace("old_string", "the old text").replace("new_string", "the new text")
    return HunkFailed(hunk, f"{hunk.label()}: {message}", failure.closest)


def _ambiguous_places(hunk: Hunk, found: dict[LineRange, tuple[EditApplied, _Place]]) -> HunkFailed:
    ranges = sorted(found, key=lambda r: r.first)
    anchors = sorted({place.anchor + 1 for _, place in found.values() if place.anchor is not None})
    listed = ", ".join(str(r) for r in ranges)
    return HunkFailed(hunk, f"{hunk.label()}: the @@ line appears at lines {', '.join(map(str, anchors))}, and "
                      f"the hunk fits under more than one of them (at lines {listed}). Add an @@ line for the "
                      "enclosing class or function, or more context lines, so that it fits one place only.")


def _not_found(work: str, hunk: Hunk, old: str, cursor: int, misses: list[EditFailed]) -> HunkFailed:
    message = (f"{hunk.label()}: its context and - lines were not found{_after(cursor)}, even ignoring line "
               "endings, trailing whitespace, indentation and typographic quotes.")
    if cursor and isinstance(apply_edit(work, old, old + "\0", scope=Scope(0, cursor)), EditApplied):
        message += (" They are in the file before that point: hunks must come in the order of the file, "
                    "each after the previous one.")
    closest = misses[0].closest if misses else None
    if closest is not None:
        message += f" The most similar part of the file is {closest.label()}; copy the lines exactly from there."
    else:
        message += " Nothing in the file resembles them closely; read the file again."
    return HunkFailed(hunk, message, closest)

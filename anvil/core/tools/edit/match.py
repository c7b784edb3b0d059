"""Where an edit applies: the matching chain, as pure functions over text (no I/O).

An edit is data — ``old_string``, ``new_string``, ``replace_all`` — applied to a file's text (``\\n`` line
endings). :func:`apply_edit` tries each step of the chain only when the previous one found nothing:

exact → line endings → trailing whitespace → blank lines → indentation → typography → unescaped → fuzzy

and returns either :class:`EditApplied` (the new text, the step that matched, where) or :class:`EditFailed`
(why, the competing places for an ambiguity, the closest region for a miss). It never guesses: several
matches without ``replace_all``, near-ties in fuzzy matching and indentation that cannot be carried over
are failures. What models commonly send besides the exact text is covered: trailing blanks (a line the model
left unchanged keeps the file's bytes, a line it changed is written as sent), blank lines around old_string
that the file does not have there, old_string re-indented or copied from the middle of its first line,
curly quotes, and strings escaped once too often (``\\"`` for ``"``), which are unescaped in new_string too.
A new_string holding a placeholder for omitted code (``# ... existing code ...``) is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher

from anvil.core.tools.edit.blocks import (
    Unmapped,
    _block_lines,
    _closest_region,
    _fuzzy_spans,
    _indentation_refusal,
    _indentation_spans,
)
from anvil.core.tools.edit.edit_data import (
    _MAX_LISTED,
    CLOSEST_MIN_SIMILARITY,
    FUZZY_MIN_LINES,
    FUZZY_THRESHOLD,
    STEP_DESCRIPTIONS,
    Edit,
    EditApplied,
    EditFailed,
    FailureKind,
    LineRange,
    MatchStep,
    MultiEditApplied,
    MultiEditFailed,
    Region,
    Scope,
    _Lines,
    _Span,
)
from anvil.core.tools.edit.habits import unescape, without_extra_blank_lines
from anvil.core.tools.edit.placeholders import new_placeholders

# The data types are defined in edit_data; they are re-exported here, where callers look for the editor's API.
__all__ = [
    "STEP_DESCRIPTIONS", "Edit", "EditApplied", "EditFailed", "FailureKind", "LineRange", "MatchStep",
    "MultiEditApplied", "MultiEditFailed", "Region", "Scope", "apply_edit", "apply_edits", "plain_typography",
]


def apply_edit(text: str, old_string: str, new_string: str, replace_all: bool = False,
               scope: Scope | None = None) -> EditApplied | EditFailed:
    """Apply one edit to ``text`` (``\\n`` line endings) through the matching chain. With ``scope``, only
    whole lines inside it can match (apply_patch's hunks)."""
    if old_string == "":
        return EditFailed("empty_old_string", "old_string is empty. To create a file or replace all of its "
                          "content use write_file; otherwise copy the text to replace into old_string.")
    new = _normalise(new_string)
    old = _normalise(old_string)
    if old == new:
        return EditFailed("no_change", "old_string and new_string are identical: there is nothing to change.")
    lines = _Lines(text)
    # Without replace_all, overlapping occurrences count too ("aa" is in "aaa" twice): which one was meant
    # is a guess. With replace_all, matches are taken left to right without overlap, like str.replace.
    overlap = not replace_all
    # The line-block steps work on old_string without blank lines at its ends the file does not have there.
    block_old, block_new = without_extra_blank_lines(old, new)
    unmapped: list[Unmapped] = []
    steps: list[tuple[MatchStep, Callable[[], list[_Span] | EditFailed]]] = [
        ("exact", lambda: _exact_spans(text, old_string, new, overlap)),
        ("line_endings", lambda: _exact_spans(text, old, new, overlap) if old != old_string else []),
        ("trailing_whitespace", lambda: _regex_spans(text, _tolerant_pattern(old, re.escape), old, new, overlap)),
        ("blank_lines", lambda: _regex_spans(text, _tolerant_pattern(block_old, re.escape), block_old, block_new,
                                             overlap) if block_old != old else []),
        ("indentation", lambda: _indentation_spans(block_old, block_new, lines, overlap, scope, unmapped)),
        ("typography", lambda: _regex_spans(text, _typography_pattern(block_old), block_old, block_new, overlap)
                               if _typography_possible(text, block_old) else []),
        ("unescaped", lambda: _unescaped_spans(text, block_old, block_new, lines, overlap, scope)),
        ("fuzzy", lambda: _indentation_refusal(unmapped, lines) or _fuzzy_spans(block_old, block_new, lines,
                                                                                 replace_all, scope)),
    ]
    for step, find in steps:
        if step != "exact" and not old.strip():
            break  # whitespace-only old_string: only an exact match means anything
        found = find()
        if isinstance(found, EditFailed):
            return found
        if scope is not None:
            found = _inside(text, found, scope)
        if not found:
            continue
        return _outcome(text, old, new, found, step, replace_all)
    return _not_found(text, block_old, new, lines, scope)


def _outcome(text: str, old: str, new: str, found: list[_Span], step: MatchStep,
             replace_all: bool) -> EditApplied | EditFailed:
    ranges = _line_ranges(text, found)
    refusal = _placeholder_refusal(text, old, new, found, ranges)
    if refusal is not None:
        return refusal
    if len(found) > 1 and not replace_all:
        how = "" if step == "exact" else f" ({STEP_DESCRIPTIONS[step]})"
        return EditFailed("ambiguous", f"old_string matches {len(found)} places{how}, at line(s) "
                          f"{_list_ranges(ranges)}. Include more surrounding lines so that it matches "
                          "exactly one place, or set replace_all to true to change every one.", ranges)
    new_text = _splice(text, found)
    if new_text == text:
        return EditFailed("no_change", f"The edit would not change the file: {ranges[0].label()} already "
                          "read as new_string.", ranges)
    return EditApplied(new_text, step, ranges, min(span.similarity for span in found))


def _inside(text: str, spans: list[_Span], scope: Scope) -> list[_Span]:
    """The matches that cover whole lines inside ``scope`` (counting lines once, in order, as they are sorted)."""
    kept, line, position = [], 0, 0
    for span in spans:
        line += text.count("\n", position, span.start)
        position = span.start
        whole = (span.start == 0 or text[span.start - 1] == "\n") and \
            (span.end == len(text) or text[span.end - 1] == "\n")
        size = text.count("\n", span.start, span.end) + (0 if text.endswith("\n", span.start, span.end) else 1)
        if whole and span.end > span.start and scope.allows(line, size):
            kept.append(span)
    return kept


def _placeholder_refusal(text: str, old: str, new: str, found: list[_Span],
                         ranges: tuple[LineRange, ...]) -> EditFailed | None:
    """A placeholder line in new_string that neither old_string nor the file where it matched has."""
    suspects = new_placeholders(new, old)
    if not suspects:
        return None
    matched = {line.strip() for span in found for line in text[span.start:span.end].split("\n")}
    missing = [(number, line) for number, line in suspects if line not in matched]
    if not missing:
        return None
    number, line = missing[0]
    return EditFailed("placeholder", f"new_string line {number} (`{line}`) looks like a placeholder for code "
                      f"left out: it would replace the real code at {ranges[0].label()} with that comment. Send "
                      "the full text that should be there, without placeholders, or narrow old_string to just "
                      "the lines you change.", ranges)


def apply_edits(text: str, edits: Sequence[Edit]) -> MultiEditApplied | MultiEditFailed:
    """Apply edits in order, each to the result of the previous ones; all or nothing."""
    results = []
    for index, edit in enumerate(edits):
        outcome = apply_edit(text, edit.old_string, edit.new_string, edit.replace_all)
        if isinstance(outcome, EditFailed):
            return MultiEditFailed(index, outcome)
        results.append(outcome)
        text = outcome.text
    return MultiEditApplied(text, tuple(results))


def _normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _splice(text: str, spans: list[_Span]) -> str:
    pieces, position = [], 0
    for span in spans:
        pieces += [text[position:span.start], span.replacement]
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


def _line_ranges(text: str, spans: list[_Span]) -> tuple[LineRange, ...]:
    # Counting newlines between consecutive positions keeps this linear however many matches there are.
    ranges, line, position = [], 1, 0
    for span in spans:  # sorted by start; they may overlap
        line += text.count("\n", position, span.start)
        position = span.start
        last_char = max(span.start, span.end - 1)  # a match ending in "\n" ends on that line
        ranges.append(LineRange(line, line + text.count("\n", span.start, last_char)))
    return tuple(ranges)


def _list_ranges(ranges: Sequence[LineRange]) -> str:
    distinct = list(dict.fromkeys(str(r) for r in ranges))  # several matches may share a line
    listed = ", ".join(distinct[:_MAX_LISTED])
    more = len(distinct) - _MAX_LISTED
    return listed + (f" and {more} more" if more > 0 else "")


# --- exact and regex steps -------------------------------------------------------------------------


def _exact_spans(text: str, old: str, new: str, overlap: bool) -> list[_Span]:
    spans = []
    position = text.find(old)
    while position >= 0:
        spans.append(_Span(position, position + len(old), new))
        position = text.find(old, position + (1 if overlap else len(old)))
    return spans


def _tolerant_pattern(old: str, escape: Callable[[str], str]) -> str:
    """A pattern for ``old`` that ignores trailing spaces and tabs on every line."""
    lines = old.split("\n")
    parts = [escape(line.rstrip(" \t")) + r"[ \t]*\n" for line in lines[:-1]]
    last = lines[-1].rstrip(" \t")
    # A last line that had trailing blanks ended a line; one that had none may stop mid-line, but when it
    # does end a line the match takes that line's trailing blanks too, so that changing it drops them.
    if last != lines[-1]:
        parts.append(escape(last) + r"[ \t]*(?=\n|\Z)")
    else:
        parts.append(escape(last) + (r"(?:[ \t]+(?=\n|\Z))?" if last else ""))
    # A pattern opening with a run of blanks must take the whole run, or the same place would also
    # match one character later and look like a second occurrence.
    opening = r"(?<![ \t])" if len(lines) > 1 and not lines[0].rstrip(" \t") else ""
    return opening + "".join(parts)


def _regex_spans(text: str, pattern: str, old: str, new: str, overlap: bool) -> list[_Span]:
    compiled = re.compile(pattern)
    spans: list[_Span] = []
    match = compiled.search(text)
    while match is not None:
        if match.end() > match.start():
            spans.append(_Span(match.start(), match.end(), _keep_unchanged_lines(old, match.group(), new)))
        match = compiled.search(text, match.start() + 1 if overlap else max(match.end(), match.start() + 1))
    return spans


_TYPOGRAPHY = {"'": "'‘’‚‛", '"': '"“”„‟', "-": "-‐‑‒–—―−", " ": " \u00a0\u2007\u2009\u202f"}
_PLAIN = {char: plain for plain, chars in _TYPOGRAPHY.items() for char in chars}
_CLASS = {plain: "[" + re.escape(chars) + "]" for plain, chars in _TYPOGRAPHY.items()}
_ELLIPSIS = r"(?:\.\.\.|…)"
_FANCY = frozenset(char for char in [*_PLAIN, "…"] if not char.isascii())
_PLAIN_TABLE = str.maketrans({char: plain for char, plain in _PLAIN.items() if char != plain})


def plain_typography(text: str) -> str:
    """``text`` with curly quotes, dashes, special spaces and ellipses written as plain ASCII."""
    return text.translate(_PLAIN_TABLE).replace("…", "...")


def _typography_possible(text: str, old: str) -> bool:
    # The typography pattern starts with character classes, so re cannot skip ahead by a literal prefix
    # and scanning 10 MB takes tens of milliseconds. When neither side holds a typographic character
    # (most code: str.isascii() is instant), the step cannot match and is skipped.
    if any(char in _FANCY for char in old):
        return True
    return not text.isascii() and any(char in text for char in _FANCY)


def _typography_escape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text.startswith("...", i):
            out.append(_ELLIPSIS)
            i += 3
            continue
        char = text[i]
        out.append(_ELLIPSIS if char == "…" else _CLASS.get(_PLAIN.get(char, "")) or re.escape(char))
        i += 1
    return "".join(out)


def _typography_pattern(old: str) -> str:
    return _tolerant_pattern(old, _typography_escape)


def _keep_unchanged_lines(old: str, region: str, new: str) -> str:
    """``new`` as it goes in place of ``region`` (the file's text matching ``old`` line for line, give or
    take trailing blanks and typographic characters).

    A line of new_string that the model left as it is in old_string (ignoring trailing blanks) keeps the
    file's bytes; a changed or added line is written as the model wrote it, except that the head and tail
    it shares with its old line keep the file's typographic characters.
    """
    old_lines, region_lines, new_lines = old.split("\n"), region.split("\n"), new.split("\n")
    if not new or len(old_lines) != len(region_lines):
        return new  # an empty new_string keeps nothing, not one empty line
    matcher = SequenceMatcher(None, [line.rstrip(" \t") for line in old_lines],
                              [line.rstrip(" \t") for line in new_lines], autojunk=False)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += region_lines[i1:i2]
        elif tag in ("replace", "insert"):
            for k in range(j2 - j1):
                paired = i1 + k < i2  # a changed line, paired with the old line in the same position
                out.append(_keep_within_line(old_lines[i1 + k], region_lines[i1 + k], new_lines[j1 + k])
                           if paired else new_lines[j1 + k])
    return "\n".join(out)


def _keep_within_line(old_line: str, region_line: str, new_line: str) -> str:
    body = new_line.rstrip(" \t")
    return _keep_unchanged_parts(old_line.rstrip(" \t"), region_line.rstrip(" \t"), body) + new_line[len(body):]


def _keep_unchanged_parts(old: str, region: str, new: str) -> str:
    """``new``, except that the head and tail it shares with ``old`` keep the file's own characters
    (curly quotes the model wrote straight), within one line."""
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    region_head = _region_offset(old, region, head)
    region_tail = _region_offset(old, region, len(old) - tail)
    if region_head is None or region_tail is None or region_head > region_tail:
        return new
    return region[:region_head] + new[head:len(new) - tail] + region[region_tail:]


def _region_offset(old: str, region: str, target: int) -> int | None:
    """The offset in ``region`` that corresponds to offset ``target`` of ``old`` (None: inside a unit)."""
    i = j = 0
    while i < target:
        o, r = old[i], region[j] if j < len(region) else ""
        if r and (o == r or _PLAIN.get(o, o) == _PLAIN.get(r, r)):
            i, j = i + 1, j + 1
        elif old.startswith("...", i) and r == "…":
            if i + 3 > target:
                return None
            i, j = i + 3, j + 1
        elif o == "…" and region.startswith("...", j):
            i, j = i + 1, j + 3
        else:
            return None
    return j


# --- failure report ---------------------------------------------------------------------------------

_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


def _not_found(text: str, old: str, new: str, lines: _Lines, scope: Scope | None) -> EditFailed:
    message = ["old_string was not found in the file, even ignoring line endings, trailing whitespace, "
               "indentation and typographic quotes/dashes."]
    old_lines, _ = _block_lines(old)
    filled = [line for line in old_lines if line.strip()]
    if filled and all(_LINE_NUMBER_PREFIX.match(line) for line in filled):
        message.append("It seems to include the line-number prefixes that read_file shows (a number and a "
                       "tab); those are not part of the file, so leave them out.")
    if new.strip() and len(new.strip()) >= 8:
        position = text.find(new)
        if position >= 0:
            line = text.count("\n", 0, position) + 1
            message.append(f"new_string is already in the file at line {line}: this edit may have been "
                           "applied already. Read the file again before retrying.")
    closest = _closest_region(old, lines, scope)
    if closest is not None and closest.similarity < CLOSEST_MIN_SIMILARITY:
        closest = None
    if closest is not None:
        if len(filled) < FUZZY_MIN_LINES and closest.similarity >= FUZZY_THRESHOLD:
            message.append(f"Fuzzy matching needs at least {FUZZY_MIN_LINES} lines, so a near match of a "
                           "shorter old_string is not applied.")
        message.append(f"The most similar part of the file is {closest.label()}. Copy old_string exactly from "
                       "there and retry.")
    else:
        message.append("Nothing in the file resembles it closely; read the file again with read_file.")
    return EditFailed("not_found", " ".join(message), closest=closest)


# --- over-escaped strings ---------------------------------------------------------------------------


def _unescaped_spans(text: str, old: str, new: str, lines: _Lines, overlap: bool,
                     scope: Scope | None) -> list[_Span]:
    """Matches of old_string once escapes written by an extra round of string escaping are undone, with
    new_string unescaped the same way: the file never gets a ``\\"`` where it had ``"``."""
    if "\\" not in old:
        return []
    plain_old, plain_new = unescape(old), unescape(new)
    if plain_old in (old, plain_new) or not plain_old.strip():
        return []
    spans = _regex_spans(text, _tolerant_pattern(plain_old, re.escape), plain_old, plain_new, overlap)
    return spans or _indentation_spans(plain_old, plain_new, lines, overlap, scope, [])

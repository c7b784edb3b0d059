"""How old_string's indentation maps onto the file's, when a block matches only with indentation ignored.

One rule, whatever the block's length: new_string is re-indented only when the mapping from old_string's
indentation to the file's is certain.

- A uniform shift (every line moved by the same amount) or a uniform scale (old_string written with another
  indent unit, 2 spaces for 4) carries over to every line of new_string.
- Otherwise the mapping goes level for level: each indentation old_string uses must stand for one indentation
  of the file, and deeper must stay deeper. A line of new_string takes the file's indentation for its level;
  one deeper than any level keeps its extra depth.
- Anything else would flatten or invent nesting the file has (two levels of the file written as one, or the
  other way round), so the edit is refused with the reason, never applied as a guess.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

from anvil.core.tools.edit.edit_data import TAB_WIDTH


def indent_of(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def width_of(indent: str) -> int:
    width = 0
    for char in indent:
        width = (width // TAB_WIDTH + 1) * TAB_WIDTH if char == "\t" else width + 1
    return width


def _spaces(width: int, use_tabs: bool | None) -> str:
    if use_tabs:
        return "\t" * (width // TAB_WIDTH) + " " * (width % TAB_WIDTH)
    return " " * width


class Reindent(Protocol):
    def apply(self, line: str) -> str | None:
        """``line`` of new_string with the file's indentation; None when its level has no place in the file."""


@dataclass(frozen=True)
class UniformReindent:
    """file = file_base + (old - old_base) * scale, for every line."""

    old_base: str
    file_base: str
    scale: Fraction
    use_tabs: bool | None  # None: the file block shows no indentation style

    def apply(self, line: str) -> str | None:
        if not line.strip():
            return ""
        indent = indent_of(line)
        body = line[len(indent):]
        rest = indent[len(self.old_base):]
        same_style = not rest or self.use_tabs is None or set(rest) == ({"\t"} if self.use_tabs else {" "})
        if self.scale == 1 and indent.startswith(self.old_base) and same_style:
            return self.file_base + rest + body  # keep the exact characters when no conversion is needed
        width = width_of(self.file_base) + (width_of(indent) - width_of(self.old_base)) * self.scale
        return _spaces(max(0, round(width)), self.use_tabs) + body


@dataclass(frozen=True)
class LevelReindent:
    """Each indentation width old_string uses, mapped to the file's indentation for it."""

    levels: dict[int, str]
    use_tabs: bool | None

    def apply(self, line: str) -> str | None:
        if not line.strip():
            return ""
        indent = indent_of(line)
        body = line[len(indent):]
        width = width_of(indent)
        if width in self.levels:
            return self.levels[width] + body
        deepest = max(self.levels)
        if width < deepest:
            return None  # between two levels whose file indentations leave it no certain place
        return self.levels[deepest] + _spaces(width - deepest, self.use_tabs) + body


def tab_style(indents: list[str]) -> bool | None:
    if any("\t" in indent for indent in indents):
        return True
    return False if any(indents) else None


def block_reindent(old_lines: list[str], file_lines: list[str], first_line: int) -> Reindent | str:
    """The mapping for a block whose lines equal old_string's once stripped, or why there is none
    (``first_line``: the block's 1-based line in the file, for that reason)."""
    uniform = _uniform_reindent(old_lines, file_lines)
    return uniform if uniform is not None else _level_reindent(old_lines, file_lines, first_line)


def _uniform_reindent(old_lines: list[str], file_lines: list[str]) -> UniformReindent | None:
    """The mapping when every non-blank line is shifted by the same offset (or scaled by the same
    factor, for a block written with another indent unit); None when the shift is not uniform."""
    pairs = [(indent_of(o), indent_of(f)) for o, f in zip(old_lines, file_lines, strict=True) if o.strip()]
    base_old, base_file = min(pairs, key=lambda pair: width_of(pair[0]))
    old_zero, file_zero = width_of(base_old), width_of(base_file)
    scale: Fraction | None = None
    for old_indent, file_indent in pairs:
        old_delta, file_delta = width_of(old_indent) - old_zero, width_of(file_indent) - file_zero
        if old_delta == 0 or file_delta <= 0:
            if old_delta != file_delta:
                return None
            continue
        ratio = Fraction(file_delta, old_delta)
        if scale is not None and ratio != scale:
            return None
        scale = ratio
    return UniformReindent(base_old, base_file, scale or Fraction(1), tab_style([f for _, f in pairs]))


def _level_reindent(old_lines: list[str], file_lines: list[str], first_line: int) -> LevelReindent | str:
    levels: dict[int, tuple[str, int]] = {}  # old_string width -> (the file's indentation, line index)
    for index, (old, found) in enumerate(zip(old_lines, file_lines, strict=True)):
        if not old.strip():
            continue
        width, file_indent = width_of(indent_of(old)), indent_of(found)
        known, known_index = levels.setdefault(width, (file_indent, index))
        if width_of(known) != width_of(file_indent):
            return (f"old_string indents its lines {known_index + 1} and {index + 1} alike, but the file indents "
                    f"lines {first_line + known_index} and {first_line + index} differently")
    ordered = sorted(levels.items())
    for (_, (shallow, shallow_index)), (_, (deep, deep_index)) in itertools.pairwise(ordered):
        if width_of(deep) <= width_of(shallow):
            return (f"old_string indents its line {deep_index + 1} deeper than its line {shallow_index + 1}, but the "
                    f"file does not (lines {first_line + deep_index} and {first_line + shallow_index})")
    file_indents = [indent for indent, _ in levels.values()]
    return LevelReindent({width: indent for width, (indent, _) in levels.items()}, tab_style(file_indents))

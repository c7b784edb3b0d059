"""DiffView: a unified diff shown the way a reviewer wants it.

Syntax highlighted with pygments (lexer from the file name), old/new line numbers, +/- lines on
tinted backgrounds, hunk headers, unified by default and side by side when the widget is wide.
Large diffs are capped with a "… N more lines" note.

Two pure steps, tested without an app: :func:`highlight_files` (pygments; independent of width, and the
slow part, so big diffs do it in a thread) and :func:`layout_diff` (numbers, tints, wrapping to a width;
cheap, redone on resize). The widget uses Textual's line API, so scrolling a long diff only renders the
lines on screen, and takes its tints from the theme through component classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.style import Style
from rich.syntax import Syntax
from rich.text import Span, Text
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from anvil.tui.diff_model import DiffLine, FileDiff, Hunk, count_lines, parse_unified_diff, side_by_side_rows
from anvil.tui.themes import pygments_style_for

#: Below this many columns of widget width a split view leaves too little room for code on each side.
SPLIT_MIN_WIDTH = 160
#: Body lines shown before the rest is summarised; enough for any edit a person reads in one go.
DEFAULT_MAX_LINES = 400
#: Up to this many lines pygments runs inline (~10 ms); above it, in a thread, with plain text shown meanwhile.
INLINE_HIGHLIGHT_LINES = 40
_SIGNS = {"context": " ", "add": "+", "remove": "-"}

#: Per file, per shown hunk: highlighted text of each line, by index in the hunk.
Highlights = list[list[dict[int, Text]]]


@dataclass(frozen=True)
class DiffPalette:
    """The non-syntax styles of a diff; the widget fills it from the theme."""

    added: Style
    removed: Style
    gutter: Style
    added_gutter: Style
    removed_gutter: Style
    hunk: Style
    file: Style
    note: Style


#: Fixed colours for rendering outside an app (tests, exports); the widget uses the theme's.
DEFAULT_PALETTE = DiffPalette(
    added=Style(bgcolor="#1f3a26"), removed=Style(bgcolor="#4a1f24"), gutter=Style(dim=True),
    added_gutter=Style(color="#5fd37f", bgcolor="#24482e"), removed_gutter=Style(color="#ff7b86", bgcolor="#5c252b"),
    hunk=Style(color="#6fb3ff"), file=Style(bold=True), note=Style(dim=True, italic=True),
)


@lru_cache(maxsize=256)
def lexer_for_path(path: str | None) -> str | None:
    """A pygments lexer alias for a file name, or None when nothing matches (shown unhighlighted)."""
    if not path:
        return None
    try:
        lexer = get_lexer_for_filename(path)
    except ClassNotFound:
        return None
    return lexer.aliases[0] if lexer.aliases else None


def highlight_code(code: str, lexer: str | None, pygments_style: str) -> Text:
    """Code highlighted with a pygments style but without the style's background, so it sits on
    whatever surface the widget has (the approval modal shows commands this way)."""
    return Text("\n").join(_highlight(code.split("\n"), lexer, pygments_style))


def _highlight(lines: list[str], lexer: str | None, pygments_style: str) -> list[Text]:
    """Highlight a run of lines as one text, so multi-line tokens (docstrings) keep their colour."""
    if lexer is None or not lines:
        return [Text(line) for line in lines]
    highlighted = Syntax("", lexer, theme=pygments_style).highlight("\n".join(lines))
    # The pygments style's background (on the text and on every token) would hide the diff tints.
    highlighted.style = ""
    plain: dict[str | Style, Style] = {}
    for k, span in enumerate(highlighted.spans):
        style = plain.get(span.style)
        if style is None:
            parsed = Style.parse(span.style) if isinstance(span.style, str) else span.style
            style = plain[span.style] = Style(color=parsed.color, bold=parsed.bold, italic=parsed.italic,
                                              underline=parsed.underline)
        highlighted.spans[k] = Span(span.start, span.end, style)
    parts = list(highlighted.split("\n", allow_blank=True))[: len(lines)]
    parts.extend(Text(line) for line in lines[len(parts):])
    return parts


def _shown_hunks(files: list[FileDiff], max_lines: int) -> list[list[Hunk]]:
    """The hunks (the last one cut short) that fit in ``max_lines`` body lines, per file."""
    budget, shown = max_lines, []
    for file in files:
        hunks: list[Hunk] = []
        for hunk in file.hunks:
            if budget <= 0:
                break
            if len(hunk.lines) > budget:
                hunk = Hunk(hunk.old_start, hunk.old_count, hunk.new_start, hunk.new_count, hunk.section,
                            hunk.lines[:budget])
            budget -= len(hunk.lines)
            hunks.append(hunk)
        shown.append(hunks)
    return shown


def highlight_files(files: list[FileDiff], pygments_style: str, *, max_lines: int = DEFAULT_MAX_LINES,
                    path: str | None = None) -> Highlights:
    """Highlight the shown lines. Each side of a hunk (context + removed, context + added) is lexed as
    one piece of real code, then mapped back to the hunk's lines."""
    result: Highlights = []
    for file, hunks in zip(files, _shown_hunks(files, max_lines), strict=True):
        lexer = lexer_for_path(file.path or path)
        per_hunk: list[dict[int, Text]] = []
        for hunk in hunks:
            texts: dict[int, Text] = {}
            for side in ("remove", "add"):
                indices = [k for k, line in enumerate(hunk.lines) if line.kind in ("context", side)]
                lines = [hunk.lines[k].text.expandtabs(4) for k in indices]
                for k, text in zip(indices, _highlight(lines, lexer, pygments_style), strict=True):
                    texts.setdefault(k, text)
            per_hunk.append(texts)
        result.append(per_hunk)
    return result


def _wrap(text: Text, width: int) -> list[Text]:
    """Cut a line into pieces of at most ``width`` cells (hard wrap: code has no good break points)."""
    plain = text.plain
    if width <= 0 or cell_len(plain) <= width:
        return [text]
    offsets: list[int] = []
    used = 0
    for index, char in enumerate(plain):
        size = cell_len(char)
        if used + size > width:
            offsets.append(index)
            used = 0
        used += size
    return list(text.divide(offsets))


def _fill(parts: list[Text], width: int, pad_style: Style) -> Text:
    """Join pieces into one line of exactly ``width`` cells; the padding takes the line's tint."""
    line = Text(no_wrap=True, overflow="crop")
    for part in parts:
        line.append_text(part)
    gap = width - line.cell_len
    if gap > 0:
        line.append(" " * gap, style=pad_style)
    elif gap < 0:
        line.truncate(width)
    return line


class _Layout:
    """Turns parsed, highlighted hunks into lines of one width. A class only to share its settings."""

    def __init__(self, palette: DiffPalette, width: int, num_width: int) -> None:
        self.palette, self.width, self.num_width = palette, width, num_width

    def styles(self, line: DiffLine | None) -> tuple[Style, Style]:
        palette = self.palette
        if line is None or line.kind == "context":
            return palette.gutter, Style()
        if line.kind == "add":
            return palette.added_gutter, palette.added
        return palette.removed_gutter, palette.removed

    def code(self, line: DiffLine, text: Text | None, tint: Style) -> Text:
        code = (text or Text(line.text.expandtabs(4))).copy()
        code.stylize_before(tint)
        if line.no_newline:
            code.append("  (no newline at end of file)", style=self.palette.note)
        return code

    def cell(self, line: DiffLine | None, numbers: tuple[int | None, ...], text: Text | None, width: int) -> list[Text]:
        """One side of a row, wrapped to ``width``: gutter (numbers and sign) then code."""
        gutter_style, tint = self.styles(line)
        if line is None:
            return [Text(" " * width)]
        gutter = " ".join("".rjust(self.num_width) if n is None else str(n).rjust(self.num_width) for n in numbers)
        gutter_text = Text(f"{gutter} {_SIGNS[line.kind]} ", style=gutter_style)
        pieces = _wrap(self.code(line, text, tint), max(width - gutter_text.cell_len, 8))
        blank = Text(" " * gutter_text.cell_len, style=gutter_style)
        return [_fill([gutter_text if k == 0 else blank, piece], width, tint) for k, piece in enumerate(pieces)]

    def unified(self, hunk: Hunk, texts: dict[int, Text]) -> list[Text]:
        out: list[Text] = []
        for k, line in enumerate(hunk.lines):
            out.extend(self.cell(line, (line.old_no, line.new_no), texts.get(k), self.width))
        return out

    def split(self, hunk: Hunk, texts: dict[int, Text]) -> list[Text]:
        index = {id(line): k for k, line in enumerate(hunk.lines)}
        half = (self.width - 1) // 2
        rule = Text("│", style=self.palette.gutter)
        out: list[Text] = []
        for old, new in side_by_side_rows(hunk):
            left = self.cell(old, (old.old_no,) if old else (), texts.get(index[id(old)]) if old else None, half)
            right_width = self.width - half - 1
            right = self.cell(new, (new.new_no,) if new else (), texts.get(index[id(new)]) if new else None,
                              right_width)
            for k in range(max(len(left), len(right))):
                left_part = left[k] if k < len(left) else Text(" " * half)
                right_part = right[k] if k < len(right) else Text(" " * right_width)
                out.append(_fill([left_part, rule, right_part], self.width, Style()))
        return out


def _file_title(file: FileDiff, palette: DiffPalette) -> Text:
    title = Text(file.path or "(diff)", style=palette.file)
    if file.is_new:
        title.append("  new file", style=palette.note)
    elif file.is_deleted:
        title.append("  deleted", style=palette.note)
    elif file.old_path and file.new_path and file.old_path != file.new_path:
        title.append(f"  renamed from {file.old_path}", style=palette.note)
    title.append(f"  +{file.additions}", style=Style(color=palette.added_gutter.color))
    title.append(f" -{file.deletions}", style=Style(color=palette.removed_gutter.color))
    return title


def layout_diff(files: list[FileDiff], highlights: Highlights | None, *, width: int, split: bool,
                palette: DiffPalette | None = None, max_lines: int = DEFAULT_MAX_LINES) -> list[Text]:
    """Lines of exactly ``width`` cells: file titles, hunk headers, numbered tinted lines, notes, and a
    "… N more lines" note when the diff is longer than ``max_lines``. Plain code when ``highlights`` is None."""
    palette = palette or DEFAULT_PALETTE
    width = max(width, 20)
    total = count_lines(files)
    if total == 0:
        notes = [note for file in files for note in file.notes] or ["(no changes)"]
        return [_fill([Text(note, style=palette.note)], width, Style()) for note in notes]
    out: list[Text] = []
    for f, (file, hunks) in enumerate(zip(files, _shown_hunks(files, max_lines), strict=True)):
        if file.hunks and not hunks:
            break  # the line budget ran out in an earlier file
        out.append(_fill([_file_title(file, palette)], width, Style()))
        numbers = [n for hunk in file.hunks for line in hunk.lines for n in (line.old_no, line.new_no) if n]
        layout = _Layout(palette, width, len(str(max(numbers, default=1))))
        for h, hunk in enumerate(hunks):
            out.append(_fill([Text(hunk.header, style=palette.hunk)], width, Style()))
            texts = highlights[f][h] if highlights is not None else {}
            out.extend(layout.split(hunk, texts) if split else layout.unified(hunk, texts))
        out.extend(_fill([Text(note, style=palette.note)], width, Style()) for note in file.notes)
    if total > max_lines:
        hidden = total - max_lines
        note = Text(f"… {hidden} more line{'s' if hidden != 1 else ''} not shown", style=palette.note)
        out.append(_fill([note], width, Style()))
    return out


def render_diff(diff: str, *, width: int, split: bool = False, pygments_style: str = "one-dark",
                palette: DiffPalette | None = None, max_lines: int = DEFAULT_MAX_LINES,
                path: str | None = None) -> list[Text]:
    """Parse, highlight and lay out a diff in one call (tests, exports, a non-Textual front end)."""
    files = parse_unified_diff(diff)
    highlights = highlight_files(files, pygments_style, max_lines=max_lines, path=path)
    return layout_diff(files, highlights, width=width, split=split, palette=palette, max_lines=max_lines)


class DiffView(Widget):
    """A unified diff, highlighted. ``side_by_side=None`` picks split view when the widget is wide."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "diff-view--added", "diff-view--removed", "diff-view--gutter", "diff-view--added-gutter",
        "diff-view--removed-gutter", "diff-view--hunk", "diff-view--file", "diff-view--note",
    }
    DEFAULT_CSS = """
    DiffView {
        height: auto;
        width: 1fr;
        & > .diff-view--added { background: $success 15%; }
        & > .diff-view--removed { background: $error 15%; }
        & > .diff-view--gutter { color: $foreground 45%; }
        & > .diff-view--added-gutter { color: $text-success; background: $success 25%; }
        & > .diff-view--removed-gutter { color: $text-error; background: $error 25%; }
        & > .diff-view--hunk { color: $text-accent; }
        & > .diff-view--file { text-style: bold; }
        & > .diff-view--note { color: $foreground 60%; text-style: italic; }
    }
    """

    def __init__(self, diff: str, *, side_by_side: bool | None = None, path: str | None = None,
                 max_lines: int = DEFAULT_MAX_LINES, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.diff = diff
        self.side_by_side = side_by_side
        self.path = path
        self.max_lines = max_lines
        self.files = parse_unified_diff(diff)
        self._highlights: tuple[str, Highlights] | None = None  # (pygments style, result)
        self._pending_style: str | None = None
        self._texts: tuple[tuple[object, ...], list[Text]] | None = None
        self._strip_cache: dict[int, Strip] = {}

    @property
    def additions(self) -> int:
        return sum(file.additions for file in self.files)

    @property
    def deletions(self) -> int:
        return sum(file.deletions for file in self.files)

    def split_for(self, width: int) -> bool:
        return self.side_by_side if self.side_by_side is not None else width >= SPLIT_MIN_WIDTH

    @property
    def split(self) -> bool:
        """Whether the diff is shown side by side at the current width."""
        return self.split_for(self.content_size.width)

    def _palette(self) -> DiffPalette:
        def style(name: str) -> Style:
            return self.get_component_rich_style(f"diff-view--{name}")

        return DiffPalette(
            added=style("added"), removed=style("removed"), gutter=style("gutter"),
            added_gutter=style("added-gutter"), removed_gutter=style("removed-gutter"),
            hunk=style("hunk"), file=style("file"), note=style("note"),
        )

    def _current_highlights(self) -> Highlights | None:
        """The highlighting for the theme's pygments style, or None while a thread is still working on it."""
        style = pygments_style_for(self.app.theme)
        if self._highlights is not None and self._highlights[0] == style:
            return self._highlights[1]
        if min(count_lines(self.files), self.max_lines) <= INLINE_HIGHLIGHT_LINES:
            self._highlights = (style, highlight_files(self.files, style, max_lines=self.max_lines, path=self.path))
            return self._highlights[1]
        if self._pending_style != style:
            self._pending_style = style
            self.run_worker(lambda: self._highlight_in_thread(style), thread=True, exclusive=True,
                            group="diff-highlight")
        return self._highlights[1] if self._highlights is not None else None

    def _highlight_in_thread(self, style: str) -> None:
        result = highlight_files(self.files, style, max_lines=self.max_lines, path=self.path)
        self.app.call_from_thread(self._highlighted, style, result)

    def _highlighted(self, style: str, result: Highlights) -> None:
        self._highlights = (style, result)
        self._texts = None
        self.refresh(layout=True)

    def _lines(self, width: int) -> list[Text]:
        highlights = self._current_highlights()
        key = (width, self.split_for(width), self.app.theme, id(highlights))
        if self._texts is None or self._texts[0] != key:
            texts = layout_diff(self.files, highlights, width=width, split=self.split_for(width),
                                palette=self._palette(), max_lines=self.max_lines)
            self._texts = (key, texts)
            self._strip_cache.clear()
        return self._texts[1]

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._lines(width))

    def render_line(self, y: int) -> Strip:
        # Lines become strips only when drawn: scrolling a long diff renders what is on screen.
        width = self.content_size.width
        lines = self._lines(width)
        if y >= len(lines):
            return Strip.blank(width, self.rich_style)
        strip = self._strip_cache.get(y)
        if strip is None:
            strip = Strip(list(lines[y].render(self.app.console)))
            strip = strip.adjust_cell_length(width, self.rich_style).apply_style(self.rich_style)
            self._strip_cache[y] = strip
        return strip

    def notify_style_update(self) -> None:
        # A theme switch changes the component styles; drop the cached lines so the tints follow.
        self._texts = None
        super().notify_style_update()

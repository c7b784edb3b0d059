"""Answers in `anvil --plain` rendered as Markdown, line by line, in the terminal's own scrollback.

The text streams in as it comes, raw, so the person sees the model working; each line, once its newline
arrives, is erased (only the rows it took, which are still on screen) and printed again rendered: headings,
emphasis, inline code, lists, quotes and rules through rich's Markdown, the lines of a fenced code block
highlighted in the fence's language. A table is rendered whole when its last row has come, in place of
its raw rows when they still fit on the screen. Nothing is drawn outside the scrollback: no full-screen
redraw, no cursor movement beyond the rows just written.
"""

from __future__ import annotations

import io
import re
from typing import Protocol

from prompt_toolkit.utils import get_cwidth

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+#.-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_TABLE_ROW = re.compile(r"^\s*\|")
_CODE_THEME = "monokai"
_SGR = r"(?:\x1b\[[0-9;]*m)*"
_TRAILING_SPACES = re.compile(rf" +({_SGR})$", re.M)
_BLANK_LINE = re.compile(rf"^{_SGR}\s*{_SGR}$")


class Sink(Protocol):
    """Where the printer writes: live text, already-styled ANSI text, and the erasing of rows just written."""

    def live(self, text: str) -> None: ...

    def styled(self, ansi: str) -> None: ...

    def erase(self, rows: int) -> None: ...

    def rows_on_screen(self) -> int: ...


def rows_taken(text: str, width: int) -> int:
    """The terminal rows ``text`` (one line, no newline) took when written from column 0."""
    cells = get_cwidth(text)
    return max(1, -(-cells // width)) if width > 0 else 1


class MarkdownPrinter:
    """Feeds one answer's streamed text; renders each finished line (or table) over its raw form."""

    def __init__(self, sink: Sink, width: int) -> None:
        self.sink = sink
        self.width = max(20, width)
        self.partial = ""  # the current line, written raw so far
        self.fence: str | None = None  # the language of the code block we are in ("" for none given)
        self.table: list[str] = []  # raw rows of a table being streamed

    def feed(self, text: str) -> None:
        while text:
            line, newline, text = text.partition("\n")
            self.partial += line
            self.sink.live(line)
            if newline:
                self._line_done(self.partial)
                self.partial = ""

    def finish(self) -> None:
        """The answer is complete: render what is left (a last line without a newline, an open table)."""
        if self.partial:
            self._line_done(self.partial, final=True)
            self.partial = ""
        self._end_table()

    def abandon(self) -> None:
        """The answer was cut short (an interrupt): leave what was written as it is."""
        if self.partial:
            self.sink.live("\n")
        self.partial, self.table, self.fence = "", [], None

    # -- lines ---------------------------------------------------------------------------------------

    def _line_done(self, line: str, *, final: bool = False) -> None:
        rows = rows_taken(line, self.width)
        if self.fence is None and _TABLE_ROW.match(line):
            self.sink.live("\n")
            self.table.append(line)
            return
        self._end_table()
        self.sink.erase(rows)
        fence = _FENCE.match(line)
        if fence:
            self.fence = None if self.fence is not None else fence.group(2)
            self.sink.styled(self._render_code_edge(line))
        elif self.fence is not None:
            self.sink.styled(self._render_code(line))
        else:
            self.sink.styled(self._render_markdown(line))

    def _end_table(self) -> None:
        if not self.table:
            return
        rows = sum(rows_taken(row, self.width) for row in self.table)
        table, self.table = self.table, []
        if rows >= self.sink.rows_on_screen():
            return  # some rows have scrolled out of reach: they stay as written
        self.sink.erase(rows + 1)  # and the row the cursor stands on after the last one
        self.sink.styled(self._render_markdown("\n".join(table)))

    # -- rendering ------------------------------------------------------------------------------------

    def _tidy(self, ansi: str) -> str:
        """rich's output without the blank lines it puts around a block (the source's own blank lines are
        printed as they come) and without the spaces it pads lines with to the full width (they would wrap
        after the terminal narrows)."""
        lines = _TRAILING_SPACES.sub(r"\1", ansi).split("\n")
        while lines and _BLANK_LINE.match(lines[0]):
            lines.pop(0)
        while lines and _BLANK_LINE.match(lines[-1]):
            lines.pop()
        return "\n".join(lines) + "\n"

    def _console(self) -> tuple[io.StringIO, object]:
        from rich.console import Console

        buffer = io.StringIO()
        return buffer, Console(file=buffer, force_terminal=True, color_system="256", width=self.width,
                               highlight=False, soft_wrap=False)

    def _render_markdown(self, text: str) -> str:
        if not text.strip():
            return "\n"
        from rich.markdown import Markdown
        from rich.text import Text

        buffer, console = self._console()
        heading = _HEADING.match(text)
        if heading and "\n" not in text:  # rich centres and boxes headings; a line interface keeps them left
            level = len(heading.group(1))
            rendered = Text.from_markup(f"[bold{' underline' if level <= 2 else ''}]"
                                        f"{_escape(heading.group(2))}[/]")
            console.print(rendered)  # type: ignore[attr-defined]
        else:
            console.print(Markdown(text, code_theme=_CODE_THEME))  # type: ignore[attr-defined]
        return self._tidy(buffer.getvalue())

    def _render_code(self, line: str) -> str:
        from rich.syntax import Syntax

        buffer, console = self._console()
        console.print(Syntax(line, self.fence or "text", theme=_CODE_THEME, word_wrap=True,  # type: ignore[attr-defined]
                             background_color="default"))
        return self._tidy(buffer.getvalue())

    def _render_code_edge(self, line: str) -> str:
        from rich.text import Text

        buffer, console = self._console()
        console.print(Text(line, style="dim"))  # type: ignore[attr-defined]
        return buffer.getvalue()


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)

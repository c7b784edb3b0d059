"""Printing in `anvil --plain`: styled lines into the terminal's scrollback, the line a tool call or a streamed
answer left open, and what the Markdown printer (anvil/plain/markdown.py) needs: live text, styled text, and
the erasing of the rows just written."""

from __future__ import annotations

from prompt_toolkit.formatted_text import ANSI, FormattedText, StyleAndTextTuples
from prompt_toolkit.output import Output
from prompt_toolkit.shortcuts import print_formatted_text

from anvil.plain.render import STYLE


class TerminalWriter:
    output: Output
    _at_line_start: bool = True
    _open_call: str | None = None  # a tool call whose line waits for its ✓ / ✗

    def write(self, fragments: StyleAndTextTuples | str) -> None:
        if isinstance(fragments, str):
            fragments = [("", fragments)]
        text = "".join(part[1] for part in fragments)
        if not text:
            return
        print_formatted_text(FormattedText(fragments), end="", style=STYLE, output=self.output, flush=True)
        self._at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish a partly written line (streamed text, a running tool's entry) before a new entry."""
        if not self._at_line_start:
            self.write("\n")
        self._open_call = None

    def say(self, text: str, style: str = "class:notice") -> None:
        self.end_line()
        self.write([(style, text.rstrip("\n") + "\n")])

    @property
    def width(self) -> int:
        """The terminal's width now (it may change between two lines)."""
        return self.output.get_size().columns or 80

    # the Markdown printer's sink (anvil/plain/markdown.py)

    def live(self, text: str) -> None:
        self.write(text)

    def styled(self, ansi: str) -> None:
        print_formatted_text(ANSI(ansi), end="", output=self.output, flush=True)
        self._at_line_start = ansi.endswith("\n")

    def erase(self, rows: int) -> None:
        self.output.write_raw("\r" + "\x1b[A" * (rows - 1) + "\x1b[J")
        self.output.flush()
        self._at_line_start = True

    def rows_on_screen(self) -> int:
        return self.output.get_size().rows or 24


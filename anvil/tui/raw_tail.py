"""The end of a reply that streams faster than Markdown renders: shown as it came, until Markdown catches up.

One widget of plain text (no Markdown parsing, no blocks to mount): the last screenful of what waits, with a
line saying how much more is on its way above it. Mounted only while text waits (see anvil/tui/reply.py).
"""

from __future__ import annotations

from typing import ClassVar

from textual.widgets import Static


class RawTail(Static):
    DEFAULT_CSS: ClassVar[str] = """
    RawTail {
        height: auto;
        padding: 0 0 1 0;
    }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)
        self.waiting = ""

    def show(self, text: str, height: int) -> None:
        """Show the last ``height`` lines of ``text``."""
        if text == self.waiting:
            return
        self.waiting = text
        lines = text.splitlines()
        if len(lines) > height > 0:
            hidden = len(lines) - height
            lines = [f"… {hidden} more line{'s' if hidden != 1 else ''} still rendering above …", *lines[-height:]]
        self.update("\n".join(lines))

"""The base of every transcript entry: focusable, searchable through ``plain_text``, copyable with ``c``."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widget import Widget


class Entry(Widget):
    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [Binding("c", "copy", "Copy", show=False)]

    @property
    def plain_text(self) -> str:
        return ""

    def action_copy(self) -> None:
        text = self.plain_text
        if text:
            self.app.copy_to_clipboard(text)
            self.app.notify("Copied to the clipboard.", timeout=2)

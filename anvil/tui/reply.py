"""The assistant's reply, streamed as Markdown.

Fragments reach the Markdown widget at most once a frame, not once a token: every update costs a layout
of the screen, so a 500 token/s stream handed over token by token would spend the loop laying out instead
of reading the stream. (Splitting a long reply into several Markdown widgets was measured and made it
slower: Textual's reflow visits every widget either way, and more widgets cost more.)
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType

from anvil.tui.entry import Entry

if TYPE_CHECKING:
    # The Markdown widget pulls in markdown-it: imported when the first reply arrives, not before the first paint.
    from textual.timer import Timer
    from textual.widgets._markdown import MarkdownStream

FLUSH_INTERVAL = 1 / 30  # seconds between Markdown updates while a reply streams


class AssistantEntry(Entry):
    """``c`` copies the whole reply; ``C`` or a click on a code block copies that block."""

    DEFAULT_CLASSES = "entry assistant"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("C", "copy_code", "Copy code", show=False)]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._last_flush = 0.0
        self._flush_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown

        yield Markdown(self.text or None)

    async def write(self, delta: str) -> None:
        self.text += delta
        self._pending.append(delta)
        if time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
            await self._flush()
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush)

    async def _flush(self) -> None:
        from textual.widgets import Markdown

        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        chunk = "".join(self._pending)
        self._pending.clear()
        self._last_flush = time.monotonic()
        if not chunk:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(Markdown))
        await self._stream.write(chunk)

    async def finish(self, text: str | None = None) -> None:
        """End the stream; ``text`` (the complete message) replaces what streamed if they differ."""
        await self._flush()
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        if text is not None and text != self.text:
            from textual.widgets import Markdown

            self.text = text
            await self.query_one(Markdown).update(text)

    @property
    def plain_text(self) -> str:
        return self.text

    def code_blocks(self) -> list[str]:
        from textual.widgets._markdown import MarkdownFence

        return [fence.code for fence in self.query(MarkdownFence)]

    def action_copy_code(self) -> None:
        blocks = self.code_blocks()
        if blocks:
            self.app.copy_to_clipboard(blocks[-1])
            self.app.notify("Copied the code block.", timeout=2)
        else:
            self.app.notify("This message has no code block.", timeout=2)

    def on_click(self, event: Any) -> None:
        from textual.widgets._markdown import MarkdownFence

        node = getattr(event, "widget", None)
        while node is not None and node is not self:
            if isinstance(node, MarkdownFence):
                self.app.copy_to_clipboard(node.code)
                self.app.notify("Copied the code block.", timeout=2)
                return
            node = node.parent

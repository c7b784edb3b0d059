"""The assistant's reply, streamed as Markdown.

Fragments reach the Markdown widget at most once a frame, not once a token: every update costs a layout
of the screen, so a 500 token/s stream handed over token by token would spend the loop laying out instead
of reading the stream.

The live Markdown stays small: once it holds more than :data:`LIVE_BLOCKS` blocks, the settled ones (all but
the last, which may still grow) are captured into one :class:`FrozenMarkdown` and the live widget restarts
with the tail. A finished reply is frozen whole. Every frame then lays out a handful of widgets per reply
instead of hundreds (benchmarks/README.md has the figures). Width and theme changes re-render from the text.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any, ClassVar
from weakref import WeakKeyDictionary

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType

from anvil.tui.entry import Entry
from anvil.tui.frozen import FrozenMarkdown, capture

if TYPE_CHECKING:
    # The Markdown widget pulls in markdown-it: imported when the first reply arrives, not before the first paint.
    from textual.timer import Timer
    from textual.widgets import Markdown
    from textual.widgets._markdown import MarkdownStream

FLUSH_INTERVAL = 1 / 30  # seconds between Markdown updates while a reply streams
#: Blocks the live Markdown may hold before the settled ones are frozen. Small enough that a frame stays
#: cheap, large enough that freezing (one capture and a fresh widget for the tail) stays rare.
LIVE_BLOCKS = 8
#: A capture needs the screen's layout of the blocks; if the layout lags behind, try again after a refresh.
CAPTURE_RETRIES = 5
#: Replies off screen wait this long (seconds) before rendering again, so those on screen go first.
OFF_SCREEN_DELAY = 0.05
#: The longest one reply holds the turn to render again (seconds), should its capture never complete.
RERENDER_TURN_LIMIT = 1.0

_render_turns: WeakKeyDictionary[App[Any], asyncio.Lock] = WeakKeyDictionary()


def _render_turn(app: App[Any]) -> asyncio.Lock:
    """One lock per app (an asyncio lock belongs to one event loop, and tests run many apps)."""
    return _render_turns.setdefault(app, asyncio.Lock())


class AssistantEntry(Entry):
    """``c`` copies the whole reply; ``C`` or a click on a code block copies that block."""

    DEFAULT_CLASSES = "entry assistant"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("C", "copy_code", "Copy code", show=False)]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text
        self._finished = bool(text)  # a reply given whole (a resumed session) never streams
        self._frozen = FrozenMarkdown()
        self._live: Markdown | None = None
        self._stream: MarkdownStream | None = None
        self._pending: list[str] = []
        self._last_flush = 0.0
        self._flush_timer: Timer | None = None
        # Writes, freezes and the finish take turns: each swaps or feeds the live widget.
        self._lock = asyncio.Lock()
        self._freeze_due = False
        self._capture_attempts = 0
        self._rerender_due = False
        self._frozen_whole = asyncio.Event()  # set once a finished reply is all captured lines

    def compose(self) -> ComposeResult:
        from textual.widgets import Markdown

        self._live = Markdown(self.text or None)
        yield self._frozen
        yield self._live

    def on_mount(self) -> None:
        if self._finished:
            self._schedule_freeze()

    # -- streaming ------------------------------------------------------------------------------------

    async def write(self, delta: str) -> None:
        self.text += delta
        self._pending.append(delta)
        if time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
            await self._flush()
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(FLUSH_INTERVAL, self._flush)

    async def _flush(self) -> None:
        async with self._lock:
            await self._flush_locked()

    async def _flush_locked(self) -> None:
        from textual.widgets import Markdown

        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        chunk = "".join(self._pending)
        self._pending.clear()
        self._last_flush = time.monotonic()
        if not chunk or self._live is None:
            return
        if self._stream is None:
            self._stream = Markdown.get_stream(self._live)
        await self._stream.write(chunk)
        # Counted before this chunk is parsed in: the check lags a frame, which is harmless.
        if len(self._live.children) > LIVE_BLOCKS:
            self._schedule_freeze()

    async def finish(self, text: str | None = None) -> None:
        """End the stream; ``text`` (the complete message) replaces what streamed if they differ."""
        async with self._lock:
            await self._flush_locked()
            await self._stop_stream()
            self._finished = True
            if text is not None and text != self.text:
                self.text = text
                await self._render_afresh()
        self._schedule_freeze()

    async def _stop_stream(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            await stream.stop()  # appends whatever it still held
            # stop() cancels the stream's task while its last append may still run (under asyncio.shield);
            # that append holds the widget's lock until its blocks are mounted.
            async with stream.markdown_widget.lock:
                pass

    # -- freezing ---------------------------------------------------------------------------------------

    def _schedule_freeze(self) -> None:
        if not self._freeze_due:
            self._freeze_due = True
            self.call_after_refresh(self._freeze)

    async def _freeze(self) -> None:
        """Capture the settled blocks (all of them once finished) and restart the live widget after them."""
        from textual.widgets._markdown import MarkdownBlock

        self._freeze_due = False
        async with self._lock:
            live = self._live
            if live is None or not self.is_attached:
                return
            if live.outer_size.width == 0:  # mounted but not laid out yet: after the next refresh
                self._retry_freeze()
                return
            await self._stop_stream()
            blocks = [child for child in live.children if isinstance(child, MarkdownBlock)]
            # The last block of a streaming reply may still grow; a finished reply freezes whole.
            captured = capture(live, blocks, len(blocks) if self._finished else len(blocks) - 1)
            if captured.blocks == 0 and blocks:
                self._retry_freeze()
                return
            lines = live.source.splitlines(keepends=True)
            cut = blocks[captured.blocks].source_range[0] if captured.blocks < len(blocks) else len(lines)
            with self.app.batch_update():
                self._frozen.add("".join(lines[:cut]), captured)
                await self._replace_live("".join(lines[cut:]))
            if self._finished and self._live is not None:
                self._retry_freeze()  # the last blocks were not laid out yet
            else:
                self._capture_attempts = 0
            if self._live is None:
                self._frozen_whole.set()
        if self._pending:
            await self._flush()

    def _retry_freeze(self) -> None:
        self._capture_attempts += 1
        if self._capture_attempts <= CAPTURE_RETRIES:
            self._schedule_freeze()
        else:
            self._frozen_whole.set()  # it stays live Markdown: correct, only slower to draw

    async def _replace_live(self, tail: str) -> None:
        """A fresh live Markdown holding ``tail``; none once a finished reply is frozen whole."""
        from textual.widgets import Markdown

        old, self._live = self._live, None
        if tail or not self._finished:
            self._live = Markdown()
            await self.mount(self._live, after=self._frozen)
            if tail:
                # append(), not Markdown(tail): append keeps the parse state a later append continues from.
                await self._live.append(tail)
        if old is not None:
            await old.remove()

    async def _render_afresh(self) -> None:
        """Back to one live Markdown of the whole text; freezing then starts over (width or theme changed)."""
        await self._stop_stream()
        shown = self.text[: len(self.text) - self._pending_length]  # the pending rest arrives with the next flush
        with self.app.batch_update():
            self._frozen.clear()
            await self._replace_live(shown)
        self._capture_attempts = 0

    @property
    def _pending_length(self) -> int:
        return sum(len(part) for part in self._pending)

    def on_frozen_markdown_stale(self, event: FrozenMarkdown.Stale) -> None:
        event.stop()
        self._request_rerender()

    def _request_rerender(self) -> None:
        if not self._rerender_due:
            self._rerender_due = True
            self.run_worker(self._rerender(), exit_on_error=False)

    async def _rerender(self) -> None:
        """Render again from the text, one reply at a time, those on screen first.

        A resize re-renders every reply in the transcript; taking turns keeps the app answering keys
        between them, and the person sees the visible ones right first.
        """
        if not self.screen.region.overlaps(self.region):
            await asyncio.sleep(OFF_SCREEN_DELAY)
        async with _render_turn(self.app):
            self._rerender_due = False
            self._frozen_whole.clear()
            async with self._lock:
                await self._render_afresh()
            self._schedule_freeze()
            if self._finished:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._frozen_whole.wait(), RERENDER_TURN_LIMIT)

    # -- reading and copying -----------------------------------------------------------------------------

    @property
    def plain_text(self) -> str:
        return self.text

    @property
    def rendered_source(self) -> str:
        """The Markdown on screen: the frozen part, then the live tail."""
        return self._frozen.source + (self._live.source if self._live is not None else "")

    @property
    def frozen(self) -> FrozenMarkdown:
        return self._frozen

    def code_blocks(self) -> list[str]:
        from textual.widgets._markdown import MarkdownFence

        live = [fence.code for fence in self._live.query(MarkdownFence)] if self._live is not None else []
        return self._frozen.code_blocks + live

    def action_copy_code(self) -> None:
        blocks = self.code_blocks()
        if blocks:
            self.app.copy_to_clipboard(blocks[-1])
            self.app.notify("Copied the code block.", timeout=2)
        else:
            self.app.notify("This message has no code block.", timeout=2)

    def on_click(self, event: Any) -> None:
        from textual.widgets._markdown import MarkdownFence

        code: str | None = None
        if getattr(event, "widget", None) is self._frozen:
            offset = event.get_content_offset(self._frozen)
            code = self._frozen.code_at(offset.y) if offset is not None else None
        node = getattr(event, "widget", None)
        while code is None and node is not None and node is not self:
            if isinstance(node, MarkdownFence):
                code = node.code
            node = node.parent
        if code is not None:
            self.app.copy_to_clipboard(code)
            self.app.notify("Copied the code block.", timeout=2)

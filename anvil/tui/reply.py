"""The assistant's reply, streamed as Markdown.

Fragments reach the Markdown widget at most once a frame, not once a token: every update costs a layout
of the screen, so a 500 token/s stream handed over token by token would spend the loop laying out instead
of reading the stream.

The live Markdown stays small: once it holds more than :data:`LIVE_BLOCKS` blocks, the settled ones (all but
the last two; see :meth:`AssistantEntry._freeze`) are captured into one :class:`FrozenMarkdown` and the live
widget restarts with the tail. A finished reply is frozen whole. Every frame then lays out a handful of
widgets per reply instead of hundreds (benchmarks/README.md has the figures). Width and theme changes
re-render from the text.

Markdown costs a few milliseconds per block (mounting, styling, laying out, capturing), so a fast stream
(2,000 tokens a second is ~170 blocks a second) would take more than the app has. Markdown then gets at most
:data:`MARKDOWN_SHARE` of the time, in steps of at most :data:`STEP_CHARS`: the text waiting for its turn is shown
as it came, plain, below the Markdown (:class:`RawTail`: the last screenful, one cheap widget), and Markdown
catches up as the stream slows or ends. The newest text is on screen within a frame, and keys are answered
between steps.
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
from anvil.tui.raw_tail import RawTail

if TYPE_CHECKING:
    # The Markdown widget pulls in markdown-it: imported when the first reply arrives, not before the first paint.
    from textual.timer import Timer
    from textual.widgets import Markdown

FLUSH_INTERVAL = 1 / 30  # seconds between Markdown updates while a reply streams
#: The most of the app's time Markdown steps take while text waits for them (a step's cost is the process's
#: CPU time from its start to the frame that shows it: the wait for that frame, or other programs' load on the
#: machine, is no cost of the step's, and counting it made Markdown wait even for a slow stream).
MARKDOWN_SHARE = 0.35
#: The most text one Markdown step takes in: a few blocks, a frame's worth of mounting.
STEP_CHARS = 1500
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
        self._pending: list[str] = []
        self._backlog = ""  # text taken from _pending that waits for Markdown's turn (shown in the raw tail)
        self._markdown_free_at = 0.0  # monotonic time from which the next Markdown step may run
        self._raw = RawTail()
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
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        self._backlog += "".join(self._pending)
        self._pending.clear()
        self._last_flush = time.monotonic()
        if not self._backlog or self._live is None:
            return
        wait = self._markdown_free_at - self._last_flush
        if wait > 0:  # Markdown had its share: the text shows plain until its turn
            self._show_raw()
            if wait != float("inf"):  # else the step still on its way to the screen sets the time (_step_done)
                self._flush_timer = self.set_timer(wait, self._flush)
            return
        piece = _step(self._backlog)
        self._backlog = self._backlog[len(piece):]
        started = time.process_time()
        self._markdown_free_at = float("inf")  # until the step is on screen and its cost known
        await self._live.append(piece)
        self.call_after_refresh(self._step_done, started)
        self._show_raw()
        # Counted before this chunk is laid out: the check lags a frame, which is harmless.
        if len(self._live.children) > LIVE_BLOCKS:
            self._schedule_freeze()

    def _show_raw(self) -> None:
        """The text waiting for Markdown, plain, after it; the widget is there only while text waits."""
        attached = self._raw.parent is not None
        if self._backlog and not attached:
            self.mount(self._raw)
        elif not self._backlog and attached:
            self._raw.remove()
        self._raw.show(self._backlog, self.app.size.height)

    def _step_done(self, started: float) -> None:
        """A Markdown step is on screen: the next may start once the others had their share of the time."""
        now = time.monotonic()
        self._markdown_free_at = now + (time.process_time() - started) * (1 / MARKDOWN_SHARE - 1)
        if self._backlog:  # a flush that came while the cost was unknown set no real time: this one does
            if self._flush_timer is not None:
                self._flush_timer.stop()
            self._flush_timer = self.set_timer(max(self._markdown_free_at - now, 0.001), self._flush)

    async def finish(self, text: str | None = None) -> None:
        """End the stream; ``text`` (the complete message) replaces what streamed if they differ. Text still
        waiting for Markdown is taken in first, a step at a time with keys answered between steps."""
        async with self._lock:
            await self._flush_locked()
        unmeasured_since: float | None = None
        while self._backlog and self._live is not None:
            now = time.monotonic()
            if self._markdown_free_at == float("inf"):  # the last step is not on screen yet: look again soon
                unmeasured_since = unmeasured_since or now
                if now - unmeasured_since > RERENDER_TURN_LIMIT:  # nor will it be (no refresh comes)
                    self._markdown_free_at = 0.0
                pause = FLUSH_INTERVAL
            else:
                unmeasured_since = None
                pause = min(self._markdown_free_at - now, 1.0)
            await asyncio.sleep(max(pause, FLUSH_INTERVAL / 10))
            async with self._lock:
                await self._flush_locked()
        async with self._lock:
            await self._flush_locked()
            self._show_raw()
            self._finished = True
            if text is not None and text != self.text:
                self.text = text
                await self._render_afresh()
        self._schedule_freeze()

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
            blocks = [child for child in live.children if isinstance(child, MarkdownBlock)]
            # A finished reply freezes whole. A streaming one keeps its last two blocks live: the last may still
            # grow, and may still change kind ("``" is a paragraph until the third backtick makes it a code
            # block, with more space above it), and the capture ends above the top margin of the block after
            # it, which must therefore be one that can no longer change.
            limit = len(blocks) if self._finished else len(blocks) - 2
            if limit <= 0 and not self._finished:
                return
            captured = capture(live, blocks, limit)
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
        if self._pending or self._backlog:
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
        shown = self.text[: len(self.text) - self._pending_length]  # the pending rest arrives with the next flush
        with self.app.batch_update():
            self._frozen.clear()
            await self._replace_live(shown)
            self._show_raw()
        self._capture_attempts = 0

    @property
    def _pending_length(self) -> int:
        return len(self._backlog) + sum(len(part) for part in self._pending)

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


def _step(backlog: str) -> str:
    """What the next Markdown step takes: at most STEP_CHARS and about LIVE_BLOCKS blocks (blank lines
    apart), cut at a line end when there is one; everything when it is less."""
    end = min(len(backlog), STEP_CHARS)
    gap = -2
    for _ in range(LIVE_BLOCKS):
        gap = backlog.find("\n\n", gap + 2, end)
        if gap < 0:
            break
    else:
        return backlog[: gap + 2]
    if end == len(backlog):
        return backlog
    cut = backlog.rfind("\n", 0, end)
    return backlog[: cut + 1] if cut > 0 else backlog[:end]

"""Settled Markdown, drawn from lines captured once.

A Markdown widget is a tree of block widgets, and every screen update re-arranges and re-measures all of
them, so a long reply made each frame slower with every paragraph (54 ms a frame at 12 KB; see
benchmarks/README.md). Blocks that can no longer change are rendered once, by Textual's own Markdown so they
look the same, and drawn from those lines by one widget whose cost does not grow with the text.

The captured lines are only right for the width and theme they were taken at; the owner (AssistantEntry)
captures again when either changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.events import Resize
    from textual.geometry import Size
    from textual.selection import Selection


@dataclass(frozen=True)
class Capture:
    """Lines rendered from the top of a Markdown widget down to a block boundary."""

    strips: list[Strip]
    #: (first line, end line, code) of each code block in the captured lines, for click-to-copy.
    fences: list[tuple[int, int, str]]
    width: int
    #: How many of the leading blocks the lines hold.
    blocks: int


def capture(markdown: Widget, blocks: Sequence[Widget], limit: int) -> Capture:
    """Render the first ``limit`` of ``markdown``'s ``blocks`` as the screen shows them, or fewer.

    Widgets render at the size the screen gave them, so only blocks whose on-screen size is what they lay
    out to now can be captured: a block mounted or grown since the last refresh ends the capture early
    (``blocks`` of the result says where). A private compositor arranges just this subtree, the way the
    screen composes it.
    """
    from textual._compositor import Compositor
    from textual.widgets._markdown import MarkdownFence

    size = markdown.outer_size
    compositor = Compositor()
    compositor.reflow(markdown, size)
    geometry = compositor.full_map
    count = 0
    for block in blocks[:limit]:
        placed = geometry.get(block)
        if placed is None or placed.region.size != block.region.size:
            break
        count += 1
    end = size.height
    if count < len(blocks):
        # Cut above the next block's own top margin: it keeps that margin where it goes, and the collapsed
        # gap between the two blocks stays the height it was.
        end_block = blocks[count]
        end = max(0, geometry[end_block].region.y - end_block.styles.margin.top) if end_block in geometry else 0
    if count == 0:
        return Capture([], [], size.width, 0)
    strips = compositor.render_strips(size)[:end]
    background = markdown.background_colors[1].rich_color
    fences = sorted((geo.region.y, geo.region.bottom, widget.code) for widget, geo in geometry.items()
                    if isinstance(widget, MarkdownFence) and geo.region.bottom <= end)
    return Capture([_see_through(strip, background) for strip in strips], fences, size.width, count)


def _see_through(strip: Strip, background: Any) -> Strip:
    """Drop the background the reply was captured on, so the entry's own (focus, search match) shows."""
    segments = []
    for text, style, control in strip:
        if style is not None and style.bgcolor == background:
            style = _without_background(style)
        segments.append(Segment(text, style, control))
    return Strip(segments, strip.cell_length)


_NO_BACKGROUND_CACHE: dict[Style, Style] = {}


def _without_background(style: Style) -> Style:
    cached = _NO_BACKGROUND_CACHE.get(style)
    if cached is None:
        # Rich has no public "unset bgcolor": rebuild the style from its other attributes.
        cached = Style(color=style.color, bold=style.bold, dim=style.dim, italic=style.italic,
                       underline=style.underline, blink=style.blink, reverse=style.reverse,
                       conceal=style.conceal, strike=style.strike, underline2=style.underline2,
                       frame=style.frame, encircle=style.encircle, overline=style.overline,
                       link=style.link, meta=style._meta and style.meta)
        if len(_NO_BACKGROUND_CACHE) > 4096:
            _NO_BACKGROUND_CACHE.clear()
        _NO_BACKGROUND_CACHE[style] = cached
    return cached


def _with_offsets(strip: Strip, y: int) -> Strip:
    """Tag each segment with its position, which is how Textual maps a mouse selection onto text."""
    segments = []
    x = 0
    for text, style, control in strip:
        offset = Style.from_meta({"offset": (x, y)})
        segments.append(Segment(text, style + offset if style else offset, control))
        x += len(text)
    return Strip(segments, strip.cell_length)


class FrozenMarkdown(Widget):
    """The settled part of a reply: captured lines, appended to as more blocks settle."""

    class Stale(Message):
        """The widget's width or the app's theme is no longer the one its lines were captured at."""

    DEFAULT_CSS = """
    FrozenMarkdown {
        height: auto;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.source = ""
        self.width_captured = 0
        self.theme_captured = ""
        self._stale_posted = False
        self._strips: list[Strip] = []
        self._fences: list[tuple[int, int, str]] = []

    def add(self, source: str, captured: Capture) -> None:
        top = len(self._strips)
        self.source += source
        self.width_captured = captured.width
        self.theme_captured = self.app.theme
        self._stale_posted = False
        self._strips.extend(_with_offsets(strip, top + y) for y, strip in enumerate(captured.strips))
        self._fences.extend((top + start, top + end, code) for start, end, code in captured.fences)
        self.refresh(layout=True)

    def clear(self) -> None:
        self.source = ""
        self.width_captured = 0
        self._stale_posted = False
        self._strips.clear()
        self._fences.clear()
        self.refresh(layout=True)

    @property
    def line_count(self) -> int:
        return len(self._strips)

    @property
    def code_blocks(self) -> list[str]:
        return [code for _, _, code in self._fences]

    def code_at(self, y: int) -> str | None:
        """The code block drawn on line ``y``, if any."""
        for start, end, code in self._fences:
            if start <= y < end:
                return code
        return None

    def on_resize(self, event: Resize) -> None:
        if self._strips and event.size.width != self.width_captured:
            self._report_stale()

    def _report_stale(self) -> None:
        if not self._stale_posted:
            self._stale_posted = True
            self.post_message(self.Stale())

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._strips)

    def render_line(self, y: int) -> Strip:
        if y >= len(self._strips):
            return Strip.blank(self.size.width)
        if self.app.theme != self.theme_captured:
            # Checked when drawn rather than watched: a watcher on the app would keep every pruned reply
            # alive, and replies off screen can wait until they are seen.
            self._report_stale()
        # The background under the text is today's (focus, search match), not the one at capture time.
        strip = self._strips[y].apply_style(Style(bgcolor=self.background_colors[1].rich_color))
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            strip = self._highlight(strip, *span)
        return strip

    def _highlight(self, strip: Strip, start: int, end: int) -> Strip:
        text = strip.text
        first = cell_len(text[:start])
        last = strip.cell_length if end == -1 else cell_len(text[:end])
        if last <= first:
            return strip
        style = self.screen.get_component_rich_style("screen--selection")
        before, chosen, after = strip.divide([first, last, strip.cell_length])
        # The selection colours go on top of the captured ones (Strip.apply_style would put them under).
        chosen = Strip(Segment.apply_style(chosen, post_style=style), chosen.cell_length)
        return Strip.join([before, chosen, after])

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = "\n".join(strip.text.rstrip() for strip in self._strips)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    async def action_link(self, href: str) -> None:
        """Links keep working once frozen: their click action was captured with the lines."""
        self.app.open_url(href)

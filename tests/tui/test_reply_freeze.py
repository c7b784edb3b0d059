"""A long reply keeps few live widgets: settled blocks are captured once and drawn from their lines.

The captured lines must be what Textual's Markdown draws for the same text, whatever the chunking of the
stream; they must follow width and theme changes, let the entry's own background show (focus, search
match), and keep code blocks copyable and text selectable.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Offset
from textual.widget import Widget
from textual.widgets import Markdown
from textual.widgets._markdown import MarkdownBlock

from anvil.tui.frozen import capture
from anvil.tui.raw_tail import RawTail
from anvil.tui.reply import LIVE_BLOCKS, AssistantEntry
from anvil.tui.themes import load_themes
from tests.tui.conftest import wait_for

SIZE = (90, 40)
TEXT = "\n\n".join(
    f"## Part {i}\n\nA paragraph with *emphasis* and `inline code`, number {i}. " + "word " * 25
    + f"\n\n- first point {i}\n- second point {i}\n\n```python\nprint({i})\n```\n\n> quoted {i}"
    for i in range(10))


class Holder(Widget):
    """Stands where an AssistantEntry would: the reference rendering of the whole text in one Markdown."""

    DEFAULT_CSS = "Holder { height: auto; }"

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        yield Markdown(self.text)


class ReplyApp(App[None]):
    CSS = """
    VerticalScroll { scrollbar-size: 0 0; }
    AssistantEntry, Holder { height: auto; }
    AssistantEntry Markdown, Holder Markdown { margin: 0; padding: 0; }
    .-match { background: $warning 30%; }
    """

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")

    def on_mount(self) -> None:
        for theme in load_themes(Path("/nonexistent"))[0]:
            self.register_theme(theme)


def rendered(strips: list[Any], app: App[Any]) -> list[str]:
    return [strip.discard_meta().render(app.console) for strip in strips]


async def reference_lines(app: ReplyApp, pilot: Any, text: str) -> list[str]:
    holder = Holder(text)
    await app.query_one("#transcript").mount(holder)
    await pilot.pause()
    await pilot.pause()
    markdown = holder.query_one(Markdown)
    blocks = [child for child in markdown.children if isinstance(child, MarkdownBlock)]
    lines = rendered(capture(markdown, blocks, len(blocks)).strips, app)
    await holder.remove()
    return lines


async def stream(entry: AssistantEntry, text: str, step: int, pause: float, watch: list[int]) -> None:
    for start in range(0, len(text), step):
        await entry.write(text[start:start + step])
        live = entry._live
        watch.append(len(live.children) if live is not None else 0)
        await asyncio.sleep(pause)


async def test_a_streamed_reply_is_frozen_into_the_lines_markdown_draws() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        want = await reference_lines(app, pilot, TEXT)
        # 4 characters every 2 ms is a 2,000 token/s stream; then bigger and fewer chunks.
        for step, pause in ((4, 0.002), (40, 0.001), (400, 0)):
            entry = AssistantEntry()
            await app.query_one("#transcript").mount(entry)
            live_blocks: list[int] = []
            await stream(entry, TEXT, step, pause, live_blocks)
            if step == 4:  # at a real rate the live Markdown stays small however long the reply grows
                assert entry.frozen.line_count > 0, "a long reply is frozen while it streams"
                assert max(live_blocks) <= 2 * LIVE_BLOCKS, max(live_blocks)
            await entry.finish()
            # Frozen whole: one widget for the whole reply.
            await wait_for(pilot, lambda entry=entry: entry._live is None and len(entry.children) == 1)
            assert entry.rendered_source == TEXT
            assert rendered(entry.frozen._strips, app) == want, f"chunks of {step}"
            await entry.remove()


async def test_a_finished_reply_given_whole_is_frozen_once_laid_out() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        want = await reference_lines(app, pilot, TEXT)
        entry = AssistantEntry(TEXT)
        await app.query_one("#transcript").mount(entry)
        await wait_for(pilot, lambda: entry._live is None)
        assert rendered(entry.frozen._strips, app) == want
        assert entry.frozen.code_blocks == [f"print({i})" for i in range(10)]
        assert entry.code_blocks() == entry.frozen.code_blocks


async def test_a_width_change_renders_the_reply_again_at_the_new_width() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        entry = AssistantEntry(TEXT)
        await app.query_one("#transcript").mount(entry)
        await wait_for(pilot, lambda: entry._live is None)
        wide = entry.frozen.line_count
        await pilot.resize_terminal(50, 40)
        await wait_for(pilot, lambda: entry._live is None and entry.frozen.width_captured == 50)
        assert entry.frozen.line_count > wide  # the paragraphs wrap into more lines
        assert rendered(entry.frozen._strips, app) == await reference_lines(app, pilot, TEXT)


async def test_a_theme_change_renders_the_reply_again_in_the_new_colours() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        app.theme = "anvil-dark"
        entry = AssistantEntry(TEXT)
        await app.query_one("#transcript").mount(entry)
        await wait_for(pilot, lambda: entry._live is None)
        dark = rendered(entry.frozen._strips, app)
        app.theme = "anvil-light"
        await wait_for(pilot, lambda: entry._live is None and rendered(entry.frozen._strips, app) != dark)
        assert rendered(entry.frozen._strips, app) == await reference_lines(app, pilot, TEXT)


async def test_the_entry_background_shows_through_the_frozen_lines() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        entry = AssistantEntry("Just a plain paragraph.")
        await app.query_one("#transcript").mount(entry)
        await wait_for(pilot, lambda: entry._live is None)
        before = entry.frozen.render_line(0)
        entry.add_class("-match")
        await pilot.pause()
        after = entry.frozen.render_line(0)
        highlight = entry.frozen.background_colors[1].rich_color
        assert {segment.style.bgcolor for segment in after if segment.text.strip()} == {highlight}
        assert before.text == after.text and before != after


async def test_selecting_frozen_text_copies_what_is_on_screen() -> None:
    from textual.selection import Selection

    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        entry = AssistantEntry("First line of text.\n\nSecond paragraph here.")
        await app.query_one("#transcript").mount(entry)
        await wait_for(pilot, lambda: entry._live is None)
        lines = [strip.text for strip in entry.frozen._strips]
        second = next(y for y, line in enumerate(lines) if "Second" in line)
        selected = entry.frozen.get_selection(Selection.from_offsets(Offset(0, 0), Offset(len(lines[second]), second)))
        assert selected is not None
        assert "First line of text." in selected[0] and "Second paragraph here." in selected[0]
        # The offsets Textual reads to map the mouse onto text are the frozen widget's own.
        offsets = [segment.style.meta.get("offset") for segment in entry.frozen._strips[second]
                   if segment.style is not None]
        assert (0, second) in offsets


async def test_removed_replies_are_not_kept_alive() -> None:
    """Pruned replies must go: nothing app-wide (a theme watcher, say) may hold on to them."""
    import gc
    import weakref

    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one("#transcript")
        removed = []  # weak references only: this app's replies, not those other tests' apps may still hold
        for n in range(20):
            entry = AssistantEntry(f"reply **{n}**\n\n- a\n- b")
            removed.append(weakref.ref(entry))
            await transcript.mount(entry)
            await pilot.pause()
        del entry
        await transcript.remove_children()
        kept = AssistantEntry("the one left")
        await transcript.mount(kept)
        for _ in range(3):
            await pilot.pause(0.05)
        gc.collect()
        assert [ref for ref in removed if ref() is not None] == []
        assert list(transcript.query(AssistantEntry)) == [kept]


async def test_a_resize_while_streaming_loses_nothing() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        entry = AssistantEntry()
        await app.query_one("#transcript").mount(entry)
        half = len(TEXT) // 2
        await stream(entry, TEXT[:half], 4, 0.002, [])
        await wait_for(pilot, lambda: entry.frozen.line_count > 0)
        await pilot.resize_terminal(60, 40)  # the frozen lines are now the wrong width: rendered again
        await stream(entry, TEXT[half:], 4, 0.002, [])
        await entry.finish()
        await wait_for(pilot, lambda: entry._live is None and entry.frozen.width_captured == 60)
        assert entry.rendered_source == TEXT
        assert rendered(entry.frozen._strips, app) == await reference_lines(app, pilot, TEXT)


async def test_text_faster_than_markdown_shows_plain_at_once_and_markdown_catches_up() -> None:
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        want = await reference_lines(app, pilot, TEXT)
        entry = AssistantEntry()
        await app.query_one("#transcript").mount(entry)
        await pilot.pause()
        await entry.write(TEXT)  # a whole reply in one delta: more than one Markdown step takes
        await pilot.pause()
        live = entry._live
        assert live is not None and "quoted 9" not in live.source  # Markdown has not taken the end in yet
        raw = entry.query_one(RawTail)  # but it is on screen, plain, below
        assert raw.waiting.endswith("> quoted 9") and raw.region.height > 0
        assert "> quoted 9" in raw.render().plain  # type: ignore[union-attr]
        await entry.finish()
        await wait_for(pilot, lambda: entry._live is None and len(entry.children) == 1)
        assert not entry.query(RawTail)  # gone once Markdown has it all
        assert rendered(entry.frozen._strips, app) == want


async def test_a_freeze_while_the_last_block_is_half_typed_keeps_the_gap_before_it() -> None:
    """The live Markdown is frozen while its last block is still "``", a paragraph that becomes a code block
    (more space above it) once the third backtick comes: the gap above it must be the code block's, once."""
    head = "\n\n".join(f"Paragraph {i}." for i in range(LIVE_BLOCKS)) + "\n\n- a\n- b\n\n``"
    rest = "`python\nprint(1)\n```\n\nThe end."
    app = ReplyApp()
    async with app.run_test(size=SIZE) as pilot:
        want = await reference_lines(app, pilot, head + rest)
        entry = AssistantEntry()
        await app.query_one("#transcript").mount(entry)
        await pilot.pause()
        await entry.write(head)
        await wait_for(pilot, lambda: entry.rendered_source == head)
        await pilot.pause()
        entry._schedule_freeze()  # what a long reply does every few blocks, here with "``" last for sure
        await wait_for(pilot, lambda: entry.frozen.line_count > 0)
        await entry.write(rest)
        await entry.finish()
        await wait_for(pilot, lambda: entry._live is None and len(entry.children) == 1)
        assert entry.rendered_source == head + rest
        assert rendered(entry.frozen._strips, app) == want

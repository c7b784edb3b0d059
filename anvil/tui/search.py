"""Ctrl+F: find text in the transcript, since a full-screen app takes the terminal's own search away.

Matching is on each entry's plain text (what the person reads); Enter jumps to the next (older) match,
Shift+Enter (or Down) back to newer ones, Esc closes the bar and gives the focus back to the prompt. Past the
oldest match on screen, the part of a resumed session not yet mounted is searched too, and loaded down to
the match.
"""

from __future__ import annotations

from typing import Any

from textual import events, on
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Input, Static
from textual.widgets.input import Selection

from anvil.tui.echo import EchoesAtOnce
from anvil.tui.transcript import Entry, Transcript

#: How far above the oldest mounted entry a search looks in a resumed session's backlog. A match there is
#: shown by mounting every entry in between, so the reach bounds what one Enter can cost (a 1,000-turn session
#: has ~4,000 entries; mounting them all took minutes and hundreds of MB).
BACKLOG_REACH = 200


class SearchInput(EchoesAtOnce, Input):
    """The search field; what is typed shows at once, even while a reply streams (echo.py)."""

    def _watch_value(self, value: str) -> None:
        super()._watch_value(value)
        self.echo_soon()

    def _watch_selection(self, selection: Selection) -> None:
        super()._watch_selection(selection)
        self.echo_soon()


async def open_search(app: App[Any], transcript: Transcript, before: Widget) -> None:
    """Ctrl+F: the search bar, mounted above ``before`` the first time, then opened."""
    bars = app.query(SearchBar)
    bar = bars.first() if bars else None
    if bar is None:
        bar = SearchBar(transcript, id="search")
        await app.mount(bar, before=before)
    bar.open()


class SearchBar(Horizontal):
    DEFAULT_CLASSES = "search"

    def __init__(self, transcript: Transcript, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.transcript = transcript
        self.matches: list[Entry] = []
        self.index = -1

    def compose(self) -> ComposeResult:
        yield SearchInput(placeholder="Search the transcript (Enter next, Shift+Enter previous, Esc close)")
        yield Static("", classes="count")

    def open(self) -> None:
        self.display = True
        self.query_one(Input).focus()
        self._search(self.query_one(Input).value)

    def close(self) -> None:
        self._clear_marks()
        self.display = False
        self.app.query_one("#prompt").focus()

    def _clear_marks(self) -> None:
        for entry in self.matches:
            entry.remove_class("-match", "-current")

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        self._search(event.value)

    def _search(self, query: str) -> None:
        self._clear_marks()
        needle = query.strip().lower()
        self.matches = [e for e in self.transcript.entries() if needle and needle in e.plain_text.lower()]
        for entry in self.matches:
            entry.add_class("-match")
        self.index = len(self.matches) - 1  # the newest first: that is where the person usually is
        self._show()

    def _show(self) -> None:
        count = self.query_one(".count", Static)
        if not self.matches:
            count.update("no match" if self.query_one(Input).value.strip() else "")
            return
        for entry in self.matches:
            entry.remove_class("-current")
        current = self.matches[self.index]
        current.add_class("-current")
        self.transcript.release_anchor()
        self.transcript.scroll_to_widget(current, animate=False, center=True)
        count.update(self._position().rstrip(" ·"))

    def _position(self) -> str:
        return f"{self.index + 1}/{len(self.matches)} · " if self.matches else ""

    def step(self, delta: int) -> None:
        # Going back past the oldest match on screen: a resumed session's older entries are searched too
        # (within reach), and mounted down to the match.
        if delta < 0 and self.index <= 0 and self._reveal_older_match():
            return
        if self.matches:
            self.index = (self.index + delta) % len(self.matches)
            self._show()

    def _reveal_older_match(self) -> bool:
        needle = self.query_one(Input).value.strip().lower()
        index = self.transcript.backlog_match(needle, BACKLOG_REACH) if needle else None
        if index is None:
            if not (needle and self.transcript.unshown > BACKLOG_REACH):
                return False  # everything was searched: wrap around to the newest match
            # Stay at the oldest match rather than wrap, and say where the search stopped.
            self.query_one(".count", Static).update(
                f"{self._position()}none in the {BACKLOG_REACH} entries above; "
                f"{self.transcript.unshown - BACKLOG_REACH:,} older not searched")
            return True
        self.run_worker(self._load_and_show(index), group="search-backlog")
        return True

    async def _load_and_show(self, index: int) -> None:
        oldest = self.matches[0] if self.matches else None
        await self.transcript.load_through(index)
        self._search(self.query_one(Input).value)
        if oldest is not None and oldest in self.matches:  # the match just before the one that was oldest
            self.index = max(0, self.matches.index(oldest) - 1)
            self._show()

    @on(Input.Submitted)
    def _next(self) -> None:
        self.step(-1)

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            self.close()
        elif event.key in {"shift+enter", "down"}:
            event.stop()
            self.step(1)
        elif event.key == "up":
            event.stop()
            self.step(-1)

"""The transcript: one widget per entry (user message, assistant reply, tool call, one-line notice).

The container uses ``layout: stream`` (cheap to arrange with many children) and stays anchored to the
bottom until the person scrolls up. Every event lays out every entry, so a 1,000-turn session stays
responsive only if few are mounted: old entries are pruned past :data:`MAX_ENTRIES` (the session file
keeps everything). Entries that can be rebuilt (a resumed session's history, ``history.py``) wait in a
backlog of factories, mounted a batch at a time as the person scrolls to the top, and return to it when
pruned. One "earlier entries" marker at the top counts what is not shown. While scrolled up, the entry in
view keeps its line on screen whatever happens above it (:meth:`Transcript.arrange`).

Every entry exposes ``plain_text`` so search and copy work on what the person reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.layout import DockArrangeResult, WidgetPlacement
from textual.scrollbar import ScrollBar
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from anvil.tui.entries import LineEntry, ThinkingEntry, ToolEntry, UserEntry, key_argument
from anvil.tui.entry import Entry
from anvil.tui.reply import AssistantEntry

#: Entries kept mounted (many screens of scrollback); older ones are removed in batches so pruning is rare
#: and cheap. The session file and /export keep everything.
MAX_ENTRIES = 150
PRUNE_BATCH = 50
#: Entries from the backlog mounted at once: the newest on resume, then one batch per scroll to the top.
HISTORY_BATCH = 50

#: Builds an entry of the backlog when it is mounted (see :meth:`Transcript.set_backlog`).
EntryFactory = Callable[[], Entry]


class EarlierMarker(Static):
    """The line above the oldest entry, counting earlier ones; Enter or a click loads more."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "load", "Load earlier entries", show=False)]

    def action_load(self) -> None:
        if isinstance(self.parent, Transcript):
            self.parent.request_older()

    def on_click(self) -> None:
        self.action_load()


class Transcript(VerticalScroll):
    """The conversation as entries; call :meth:`add` for each new one, :meth:`set_backlog` for history."""

    DEFAULT_CLASSES = "transcript"

    def __init__(self, *, max_entries: int = MAX_ENTRIES, id: str | None = None) -> None:
        super().__init__(id=id)
        self.max_entries = max_entries
        self.pruned = 0  # entries removed for good (not in the backlog)
        self.tools: dict[str, ToolEntry] = {}
        # _backlog[:_unshown] wait to be mounted; the next _from_backlog are the top mounted entries.
        self._backlog: Sequence[EntryFactory] = ()
        self._unshown = self._from_backlog = 0
        self._loaded_for_reading = 0  # loaded by scrolling up: not pruned until the person is at the bottom
        self._loading_older = False
        # Scroll anchoring (see arrange): the entry kept in place, its line in the view, and the offset it
        # was left at (any other offset means the person scrolled since).
        self._arranged: DockArrangeResult | None = None
        self._kept: Widget | None = None
        self._kept_line = 0
        self._kept_scroll = 0.0

    def on_mount(self) -> None:
        self.anchor()

    def entries(self) -> list[Entry]:
        # An entry being removed stays a child until the removal completes, but its display is off from the
        # start: skipping it keeps several additions in one go from pruning (and counting) it twice.
        return [child for child in self.children if isinstance(child, Entry) and child.display]

    @property
    def unshown(self) -> int:
        """Earlier entries in the backlog, not mounted: what scrolling to the top loads."""
        return self._unshown

    def reveal_latest(self) -> None:
        """Scroll to the newest entry and follow what comes next, as sending a prompt does (a slash command's
        output must not land out of sight below a view scrolled up)."""
        self.scroll_end(animate=False)
        self.anchor()

    def add(self, entry: Entry) -> Entry:
        if isinstance(entry, ToolEntry):
            self.tools[entry.call_id] = entry
        self.mount(entry)
        self._prune()
        return entry

    async def append(self, entry: Entry) -> Entry:
        """Add and wait until the entry is mounted (before streaming into it)."""
        if isinstance(entry, ToolEntry):
            self.tools[entry.call_id] = entry
        await self.mount(entry)
        self._prune()
        return entry

    def add_line(self, kind: str, text: str, rows: tuple[tuple[str, str], ...] = ()) -> LineEntry:
        entry = LineEntry(kind, text, rows)
        self.add(entry)
        return entry

    # -- the backlog --------------------------------------------------------------------------------

    def set_backlog(self, factories: Sequence[EntryFactory], *, shown: int = HISTORY_BATCH) -> None:
        """Entries older than any mounted (oldest first; the transcript has no backlog yet): mount the newest
        ``shown`` and keep the rest for scrolling up. Factories, because even an unmounted widget costs
        kilobytes, and a 1,000-turn session has thousands of entries."""
        self._backlog, self._unshown, self._from_backlog = factories, len(factories), 0
        self._mount_older(shown)

    def backlog_match(self, needle: str, reach: int) -> int | None:
        """Where in the backlog the newest entry not yet mounted whose text contains ``needle`` (lower case)
        is, looking at most ``reach`` entries above the oldest mounted one (finding it means mounting all in
        between), or None. Entries without a ``text`` (none today) are not searched."""
        for index in range(self._unshown - 1, max(-1, self._unshown - 1 - reach), -1):
            if needle in str(getattr(self._backlog[index], "text", "")).lower():
                return index
        return None

    async def load_through(self, index: int) -> None:
        """Mount backlog entries down to (and including) ``index``, a batch at a time."""
        while self._unshown > index:
            if not await self.load_older():
                break

    def request_older(self) -> None:
        """Load the next batch from the backlog soon (from a scroll watcher, a key, a click)."""
        if self._unshown and not self._loading_older:
            self._loading_older = True
            self.call_later(self.load_older)

    async def load_older(self, count: int = HISTORY_BATCH) -> int:
        """Mount up to ``count`` earlier entries above the oldest shown; returns how many."""
        try:
            before = self._unshown
            mounting = self._mount_older(count)
            if mounting is not None:
                await mounting
            loaded = before - self._unshown
            self._loaded_for_reading += loaded
            return loaded
        finally:
            self._loading_older = False

    def _mount_older(self, count: int) -> AwaitMount | None:
        """Build and mount the next ``count`` backlog entries at the top."""
        start = max(0, self._unshown - count)
        entries = [make() for make in self._backlog[start:self._unshown]]
        if not entries:
            return None
        self._unshown = start
        self._from_backlog += len(entries)
        first = next(iter(self.entries()), None)
        mounting = self.mount(*entries, before=first) if first is not None else self.mount(*entries)
        self._update_marker()
        return mounting

    # -- pruning ------------------------------------------------------------------------------------

    def _following(self) -> bool:
        """At the bottom, where new entries appear (Textual's anchor holds the view there), or with nothing to
        scroll (the anchor then leaves the offset negative, not 0)."""
        return self.max_scroll_y <= 0 or self.scroll_y >= self.max_scroll_y

    def _prune(self) -> None:
        entries = self.entries()
        if self._following():
            self._loaded_for_reading = 0  # the person is back at the bottom: what they loaded may go
        limit = self.max_entries + self._loaded_for_reading
        if len(entries) <= limit or (not self._following() and len(entries) <= limit + self.max_entries):
            return  # scrolled up, pruning would take what the person reads: it waits (within a bound)
        old = entries[: min(len(entries) - self.max_entries + PRUNE_BATCH, len(entries) - 1)]
        for entry in old:
            if isinstance(entry, ToolEntry):
                self.tools.pop(entry.call_id, None)
        if len(old) <= self._from_backlog:
            # Only backlog entries: they go back to it, to be rebuilt if the person scrolls up again.
            self._unshown += len(old)
            self._from_backlog -= len(old)
        else:
            # Live entries go too: they cannot be rebuilt, so what is above them cannot be shown in order.
            self.pruned += self._unshown + len(old)
            self._backlog, self._unshown, self._from_backlog = (), 0, 0
        self._loaded_for_reading = max(0, self._loaded_for_reading - len(old))
        self.remove_children(old)
        self._update_marker()

    def _update_marker(self) -> None:
        if self._unshown:
            text = (f"↑ {self._unshown:,} earlier entries: scroll up to load more; the session file keeps them all, "
                    "/export writes everything.")
        elif self.pruned:
            text = (f"↑ {self.pruned:,} earlier entries are not shown; the session file keeps them all "
                    "(/export writes the whole conversation).")
        else:
            text = ""
        marker = self.query(EarlierMarker)
        if marker and text:
            marker.first().update(text)
        elif marker:
            marker.remove()
        elif text:
            self.mount(EarlierMarker(text, id="earlier", markup=False), before=0)

    # -- scrolling ------------------------------------------------------------------------------------

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value <= 0 < old_value:  # reached the top: the next batch, if there is one
            self.request_older()

    def on_mouse_scroll_up(self) -> None:
        if self.scroll_y <= 0:  # already at the top (or nothing to scroll): the wheel asks for more
            self.request_older()

    def arrange(self, size: Size, optimal: bool = False) -> DockArrangeResult:
        """Textual's arrangement, with the scroll offset moved so that the entry the person looks at keeps its
        line on screen (scroll anchoring, as browsers do). Without it, entries mounted above the view (an
        older batch), pruned above it, or changing height there (a reply rendered after mounting) would
        move the text being read. Done here because the compositor reads the offset right after arranging,
        before painting: any later adjustment would paint one jumped frame first."""
        previous, result = self._arranged, super().arrange(size, optimal)
        if optimal:
            return result
        self._arranged = result
        if result is previous or previous is None:
            return result
        if self._following():
            self._kept = None  # the compositor's own anchor to the bottom decides
            return result
        top = self.scroll_y
        now = self._placement(result, self._kept)
        if now is None or top != self._kept_scroll:
            # The person scrolled (or the anchor went): anchor to the first entry that starts in view. It
            # stays the anchor while entries settle, so that one growing above cannot push it down.
            was = next((p for p in previous.placements if isinstance(p.widget, Entry) and p.region.y >= top), None)
            now = self._placement(result, was.widget if was else None)
            if was is None or now is None:
                self._kept = None
                return result
            self._kept, self._kept_line = was.widget, was.region.y - top
        y = max(0, now.region.y - self._kept_line)
        if y != top:
            # As the compositor sets its own anchor: without validation (the virtual size is updated only
            # after arranging) and without a refresh (this layout is the refresh).
            self.set_reactive(Widget.scroll_y, y)
            self.set_reactive(Widget.scroll_target_y, y)
            self.vertical_scrollbar.set_reactive(ScrollBar.position, y)
        self._kept_scroll = y
        return result

    @staticmethod
    def _placement(arrangement: DockArrangeResult, widget: Widget | None) -> WidgetPlacement | None:
        return next((p for p in arrangement.placements if p.widget is widget), None) if widget else None

    async def clear(self) -> None:
        self.tools.clear()
        self.pruned = 0
        self._backlog, self._unshown, self._from_backlog, self._loaded_for_reading = (), 0, 0, 0
        self._kept = None
        await self.remove_children()


__all__ = ["HISTORY_BATCH", "AssistantEntry", "EarlierMarker", "Entry", "EntryFactory", "LineEntry", "ThinkingEntry",
           "ToolEntry", "Transcript", "UserEntry", "key_argument"]

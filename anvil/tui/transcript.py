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

import contextlib
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.geometry import Size
from textual.layout import DockArrangeResult, WidgetPlacement
from textual.scrollbar import ScrollBar
from textual.widget import AwaitMount, Widget
from textual.widgets import Static

from anvil.tui.entry import Entry
from anvil.tui.reply import AssistantEntry

if TYPE_CHECKING:
    from anvil.core.events import ToolCallStarted, ToolResultEvent

#: Entries kept mounted (many screens of scrollback); older ones are removed in batches so pruning is rare
#: and cheap. The session file and /export keep everything.
MAX_ENTRIES = 150
PRUNE_BATCH = 50
#: Entries from the backlog mounted at once: the newest on resume, then one batch per scroll to the top.
HISTORY_BATCH = 50
PREVIEW_LINES = 4
#: Tools whose output repeats what the app shows elsewhere (the todo sidebar): no preview lines.
QUIET_OUTPUT = {"todo_write", "todo_read"}
KEY_ARGS = ("path", "command", "pattern", "id", "query", "url")

#: Builds an entry of the backlog when it is mounted (see :meth:`Transcript.set_backlog`).
EntryFactory = Callable[[], Entry]


_HAS_DURATION = re.compile(r"\d(\.\d+)?(ms|s|m\d+s)\b")


def key_argument(name: str, args: dict[str, Any]) -> str:
    """The one argument that says what a tool call is about, for the block's header."""
    if name == "todo_write":
        todos = args.get("todos")
        return f"{len(todos)} items" if isinstance(todos, list) else ""
    for key in KEY_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return _one_line(value)
    for value in args.values():
        if isinstance(value, str) and value:
            return _one_line(value)
    return ""


def _one_line(text: str, limit: int = 90) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def format_duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class UserEntry(Entry):
    DEFAULT_CLASSES = "entry user"

    def __init__(self, text: str, *, queued: bool = False) -> None:
        super().__init__()
        self.text = text
        self.queued = queued
        if queued:
            self.add_class("-queued")

    def compose(self) -> ComposeResult:
        label = "› queued " if self.queued else "› "
        yield Static(Content.assemble((label, "bold $accent"), self.text), classes="body")

    def mark_sent(self) -> None:
        self.remove_class("-queued")
        self.queued = False
        with contextlib.suppress(NoMatches):
            self.query_one(Static).update(Content.assemble(("› ", "bold $accent"), self.text))

    @property
    def plain_text(self) -> str:
        return self.text


class ToolEntry(Entry):
    """A tool call: a one-line header (name, key argument, status, duration) and collapsible output."""

    DEFAULT_CLASSES = "entry tool"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "toggle", "Expand/collapse", show=False)]

    def __init__(self, event: ToolCallStarted) -> None:
        super().__init__()
        self.call_id = event.call_id
        self.name_ = event.name
        self.arg = key_argument(event.name, event.args)
        self.status = "running"
        self.detail = ""
        self.output = ""
        self.diff: str | None = None
        self.expanded = False
        self.nested: list[str] = []  # a sub-agent's steps (task calls)
        self.add_class("-running")

    def compose(self) -> ComposeResult:
        yield Static(self._header(), classes="header")
        yield Static("", classes="output", markup=False)

    def _header(self) -> Content:
        marks = {"running": ("⋯", "$text-muted"), "waiting": ("?", "$warning"), "ok": ("✓", "$success"),
                 "error": ("✗", "$error"), "denied": ("⊘", "$warning")}
        mark, style = marks.get(self.status, ("·", ""))
        parts: list[str | tuple[str, str]] = [(f"{mark} ", style), (self.name_, "bold")]
        if self.arg:
            parts += ["  ", (self.arg, "$text-primary")]
        if self.detail:
            parts += ["  ", (self.detail, "$text-muted")]
        limit = 0 if self.name_ in QUIET_OUTPUT else 1 if self.diff else PREVIEW_LINES
        if (self.output and self.output.count("\n") + 1 > limit) or (self.nested and self.status != "running"):
            parts += ["  ", ("▾ less" if self.expanded else "▸ more", "$text-muted italic")]
        return Content.assemble(*parts)

    def add_nested(self, step: str) -> None:
        self.nested.append(step)
        self._refresh()

    def set_waiting(self) -> None:
        self.status = "waiting"
        self.detail = "waiting for approval"
        self._refresh()

    def finish(self, result: ToolResultEvent) -> None:
        self.status = "ok" if result.ok else ("denied" if result.summary == "denied" else "error")
        # Some summaries carry the duration already ("exit 0 · 1.2s"): do not say it twice.
        timed = bool(_HAS_DURATION.search(result.summary))
        self.detail = " · ".join(p for p in (result.summary, "" if timed else format_duration(result.duration)) if p)
        self.output = result.output.rstrip("\n")
        self.remove_class("-running")
        self.add_class(f"-{self.status}")
        self.diff = result.diff or None
        self._refresh()

    def _mount_diff(self, diff: str, after: Widget) -> None:
        widget: Widget
        try:
            from anvil.tui.diff_view import DiffView

            widget = DiffView(diff)
        except Exception as exc:  # a diff that cannot be drawn must not lose the result: show it plain
            widget = Static(f"(diff shown plain: {exc})\n{diff}", markup=False)
        widget.add_class("diff")
        self.mount(widget, after=after)

    def _refresh(self) -> None:
        try:
            header = self.query_one(".header", Static)
            output = self.query_one(".output", Static)
        except NoMatches:  # not composed yet: on_mount renders the state then
            return
        header.update(self._header())
        # With a diff shown, the output repeats it: keep only its first line unless expanded.
        lines = self.output.splitlines()
        limit = 0 if self.name_ in QUIET_OUTPUT else 1 if self.diff else PREVIEW_LINES
        shown = lines if self.expanded else lines[:limit]
        if not self.expanded and len(lines) > limit and limit:
            shown = [*shown, f"… {len(lines) - limit} more lines"]
        if self.nested:  # a sub-agent: its latest steps while it runs, all of them when expanded
            steps = [f"  ↳ {step}" for step in self.nested]
            if self.expanded:
                shown = [*steps, *shown]
            elif self.status == "running":
                shown = steps[-3:]
            else:
                shown = [*shown, f"  ↳ {len(steps)} sub-agent steps (Enter to expand)"]
        output.update("\n".join(shown))
        output.display = bool(shown)
        if self.diff and not self.query(".diff"):
            self._mount_diff(self.diff, after=output)

    def on_mount(self) -> None:
        self._refresh()

    def action_toggle(self) -> None:
        self.expanded = not self.expanded
        self._refresh()

    def on_click(self) -> None:
        self.action_toggle()

    @property
    def plain_text(self) -> str:
        head = f"{self.name_} {self.arg}".strip()
        return f"{head}\n{self.output}" if self.output else head


class LineEntry(Entry):
    """One line for an error, retry, compaction, interruption or notice; ``kind`` picks the colour."""

    DEFAULT_CLASSES = "entry line"

    def __init__(self, kind: str, text: str) -> None:
        super().__init__()
        self.kind = kind
        self.text = text
        self.add_class(f"-{kind}")

    def compose(self) -> ComposeResult:
        yield Static(self.text, markup=False)

    @property
    def plain_text(self) -> str:
        return self.text


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

    def add_line(self, kind: str, text: str) -> LineEntry:
        entry = LineEntry(kind, text)
        self.add(entry)
        return entry

    # -- the backlog --------------------------------------------------------------------------------

    def set_backlog(self, factories: Sequence[EntryFactory], *, shown: int = HISTORY_BATCH) -> None:
        """Entries older than any mounted (oldest first; the transcript has no backlog yet): mount the newest
        ``shown`` and keep the rest for scrolling up. Factories, because even an unmounted widget costs
        kilobytes, and a 1,000-turn session has thousands of entries."""
        self._backlog, self._unshown, self._from_backlog = factories, len(factories), 0
        self._mount_older(shown)

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


__all__ = ["HISTORY_BATCH", "AssistantEntry", "EarlierMarker", "Entry", "EntryFactory", "LineEntry", "ToolEntry",
           "Transcript", "UserEntry", "key_argument"]

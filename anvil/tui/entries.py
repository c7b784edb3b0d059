"""Transcript entries: a person's message, the model's reasoning and a tool call (each a header with collapsible
text), a one-line notice.

The assistant's reply, which streams and freezes, lives in ``reply.py``; the container that holds them all
in ``transcript.py``. Every entry exposes ``plain_text`` so search and copy work on what the person reads.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.css.query import NoMatches
from textual.widget import Widget
from textual.widgets import Static

from anvil.tui.entry import Entry

if TYPE_CHECKING:
    from anvil.core.events import ToolCallStarted, ToolResultEvent

PREVIEW_LINES = 4
#: Kinds of tools whose output repeats what the app shows elsewhere (todos, in the sidebar): no preview lines.
QUIET_KINDS = {"think"}
KEY_ARGS = ("path", "command", "pattern", "id", "query", "url")

_HAS_DURATION = re.compile(r"\d(\.\d+)?(ms|s|m\d+s)\b")


def key_argument(name: str, args: dict[str, Any]) -> str:
    """The one argument that says what a tool call is about, for the block's header."""
    todos = args.get("todos")
    if isinstance(todos, list):  # a todo list: its size, the sidebar shows the items
        return f"{len(todos)} items"
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


class ThinkingEntry(Entry):
    """The model's reasoning: a dim, collapsed "Thinking" block; Enter or a click shows the whole text."""

    DEFAULT_CLASSES = "entry thinking"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "toggle", "Expand/collapse", show=False)]

    def __init__(self, text: str = "", *, streaming: bool = False) -> None:
        super().__init__()
        self.text = text
        self.streaming = streaming
        self.expanded = False

    def compose(self) -> ComposeResult:
        yield Static(self._header(), classes="header")
        yield Static("", classes="body", markup=False)

    def _header(self) -> Content:
        from anvil.frontend.lines import thought_text  # the engine's events load after the first paint

        label = thought_text(self.text, done=not self.streaming)
        more = "▾ less" if self.expanded else "▸ Enter to expand"
        return Content.assemble(("✻ ", "$text-muted"), (label, "italic $text-muted"), "  ", (more, "$text-muted"))

    def write(self, piece: str) -> None:
        self.text += piece
        self._refresh()

    def finish(self) -> None:
        self.streaming = False
        self._refresh()

    def _refresh(self) -> None:
        try:
            header = self.query_one(".header", Static)
            body = self.query_one(".body", Static)
        except NoMatches:  # not composed yet: on_mount renders the state then
            return
        header.update(self._header())
        body.update(self.text.strip() if self.expanded else "")
        body.display = self.expanded

    def on_mount(self) -> None:
        self._refresh()

    def action_toggle(self) -> None:
        self.expanded = not self.expanded
        self._refresh()

    def on_click(self) -> None:
        self.action_toggle()

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
        self.tool_kind = event.kind
        self.phase = event.phase
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
        limit = 0 if self.tool_kind in QUIET_KINDS else 1 if self.diff else PREVIEW_LINES
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
        limit = 0 if self.tool_kind in QUIET_KINDS else 1 if self.diff else PREVIEW_LINES
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

    def __init__(self, kind: str, text: str, rows: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__()
        self.kind = kind
        self.text = text
        self.rows = rows  # two columns (/help): each description wraps under itself
        self.add_class(f"-{kind}")

    def compose(self) -> ComposeResult:
        if not self.rows:
            yield Static(self.text, markup=False)
            return
        from rich.table import Table
        from rich.text import Text

        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column()
        for name, description in self.rows:  # Text, not markup: "/rewind [turn]" is not a style tag
            grid.add_row(Text(name, style="bold"), Text(description))
        yield Static(grid, classes="rows")

    @property
    def plain_text(self) -> str:
        return self.text

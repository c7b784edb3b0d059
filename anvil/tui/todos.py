"""The model's todo list: a sidebar on wide terminals, a one-line summary above the input on narrow ones.

Both render from the same tuple of TodoItem (TodosChanged always carries the whole list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Static

if TYPE_CHECKING:
    from anvil.core.events import TodoItem

MARKS = {"completed": ("✔", "$success"), "in_progress": ("▶", "$accent"), "pending": ("○", "$text-muted"),
         "cancelled": ("✗", "$text-muted")}
#: Below this width the sidebar would squeeze the transcript; the summary line replaces it.
NARROW_WIDTH = 100


def progress(todos: Sequence[TodoItem]) -> tuple[int, int]:
    active = [t for t in todos if t.status != "cancelled"]
    return sum(t.status == "completed" for t in active), len(active)


def current(todos: Sequence[TodoItem]) -> TodoItem | None:
    return next((t for t in todos if t.status == "in_progress"), None)


def render_todos(todos: Sequence[TodoItem]) -> Content:
    if not todos:
        return Content.styled("No todos yet.", "$text-muted")
    lines: list[Content] = []
    for item in todos:
        mark, style = MARKS.get(item.status, ("·", ""))
        text = item.active_form if item.status == "in_progress" and item.active_form else item.content
        text_style = {"completed": "$text-muted strike", "cancelled": "$text-muted strike",
                      "in_progress": "bold"}.get(item.status, "")
        lines.append(Content.assemble((f"{mark} ", style), (text, text_style)))
    return Content("\n").join(lines)


def render_summary(todos: Sequence[TodoItem]) -> Content:
    done, total = progress(todos)
    now = current(todos)
    parts: list[str | tuple[str, str]] = [("Todos ", "bold"), (f"{done}/{total}", "$accent")]
    if now is not None:
        parts += [(" · ▶ ", "$accent"), now.active_form or now.content]
    elif total and done == total:
        parts.append((" · all done", "$success"))
    return Content.assemble(*parts)


class TodoSidebar(VerticalScroll):
    DEFAULT_CLASSES = "todos"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.todos: tuple[TodoItem, ...] = ()

    def compose(self) -> ComposeResult:
        yield Static(Content.styled("Todos", "bold"), classes="title")
        yield Static(render_todos(()), classes="list")

    def set_todos(self, todos: Sequence[TodoItem], job: str = "") -> None:
        """The list, headed by the workflow job's phase when there is one (``job``: "phase 2 · tactical")."""
        self.todos = tuple(todos)
        self.query_one(".list", Static).update(render_todos(self.todos))
        done, total = progress(self.todos)
        heading = job[:1].upper() + job[1:] if job else "Todos"
        title = Content.assemble((f"{heading} ", "bold"), (f"{done}/{total}", "$accent"))
        self.query_one(".title", Static).update(title)


class TodoSummary(Static):
    """One line above the input, shown when the sidebar is hidden and there is a list."""

    DEFAULT_CLASSES = "todo-summary"

    def set_todos(self, todos: Sequence[TodoItem]) -> None:
        self.update(render_summary(todos))


def place_todos(sidebar: TodoSidebar, summary: TodoSummary, width: int, forced: bool | None) -> None:
    """The sidebar on wide terminals (or as Ctrl+T / /todos set it), else the summary line when there is a list."""
    show = forced if forced is not None else (width >= NARROW_WIDTH and bool(sidebar.todos))
    sidebar.display = show
    summary.display = bool(sidebar.todos) and not show

"""todo_write and todo_read: the model's plan, shown to the person in a sidebar.

The list lives in ``ctx.todos`` as :class:`TodoItem` values; every change emits
:class:`TodosChanged` with the whole list so front ends never have to merge updates.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from anvil.core.events import TodoItem, TodosChanged
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError

_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]", "cancelled": "[-]"}


def render_todos(items: list[TodoItem]) -> str:
    """The list as the model reads it, one item a line: [x] done, [>] current, [ ] pending, [-] cancelled."""
    if not items:
        return "No todos yet."
    return "\n".join(f"{_MARKS[item.status]} {item.content}" for item in items)


def _progress(items: list[TodoItem]) -> str:
    done = sum(item.status == "completed" for item in items)
    return f"{len(items)} todo{'s' if len(items) != 1 else ''} · {done} done"


class TodoEntry(ToolArgs):
    content: str = Field(description="What to do, in the imperative: \"Add a test for the parser\".")
    status: Literal["pending", "in_progress", "completed", "cancelled"]
    active_form: str | None = Field(
        default=None, description="The same in the present continuous, shown while it is in progress: "
                                  "\"Adding a test for the parser\".")


class TodoWriteArgs(ToolArgs):
    todos: list[TodoEntry] = Field(description="The complete list; it replaces the previous one.")


class TodoWrite(Tool):
    name = "todo_write"
    description = (
        "Write your plan for the task as a todo list the person can follow; the list you send replaces "
        "the previous one. Use it for work with three or more steps. Mark an item in_progress just before "
        "starting it (only one at a time) and completed as soon as it is done; cancel items that no longer "
        "apply instead of leaving them pending."
    )
    Args = TodoWriteArgs
    kind = "think"  # it changes only the plan, never the project, so plan mode and sub-agents may use it

    def phase(self, args: Any) -> str:
        return "Planning"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        items: list[TodoItem] = []
        for number, entry in enumerate(args.todos, start=1):
            content = entry.content.strip()
            if not content:
                raise ToolError(f"Todo {number} has empty content; the list was not changed. Give every item "
                                "a short description of the work, or leave the item out.")
            active = (entry.active_form or "").strip() or None
            items.append(TodoItem(content=content, status=entry.status, active_form=active))
        current = [n for n, item in enumerate(items, start=1) if item.status == "in_progress"]
        if len(current) > 1:
            numbers = ", ".join(map(str, current))
            raise ToolError(f"Todos {numbers} are all in_progress, but only one item can be in progress at a "
                            "time; the list was not changed. Mark the others pending (or completed) and send "
                            "the list again.")
        ctx.todos[:] = items  # in place: whoever holds the list (session, front end) sees the change
        ctx.emit(TodosChanged(tuple(items)))
        header = f"Todo list updated ({_progress(items)}):" if items else "Todo list cleared."
        return ToolResult(output=f"{header}\n{render_todos(items)}" if items else header,
                          summary=_progress(items), data={"todos": [_plain(item) for item in items]})


class TodoRead(Tool):
    name = "todo_read"
    kind = "think"
    description = "Show your current todo list with each item's status."

    def phase(self, args: Any) -> str:
        return "Planning"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        items = list(ctx.todos)
        return ToolResult(output=render_todos(items), summary=_progress(items) if items else "no todos yet")


def _plain(item: TodoItem) -> dict[str, Any]:
    return {"content": item.content, "status": item.status, "active_form": item.active_form}


TODO_TOOLS: list[Tool] = [TodoWrite(), TodoRead()]

"""todo_write and todo_read: validation, the list in the context, the event and the rendering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import Event, TodoItem, TodosChanged
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError
from anvil.core.tools.todos import TODO_TOOLS, TodoRead, TodoWrite, render_todos

write_tool, read_tool = TodoWrite(), TodoRead()


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def ctx(tmp_path: Path, events: list[Event]) -> ToolContext:
    return ToolContext(root=tmp_path, data_dir=tmp_path / "data", emit=events.append)


async def write(ctx: ToolContext, todos: list[dict[str, Any]]) -> str:
    result = await write_tool.run(write_tool.Args.model_validate({"todos": todos}), ctx)
    return result.output


PLAN = [
    {"content": "Read the parser", "status": "completed"},
    {"content": "Fix the off-by-one", "status": "in_progress", "active_form": "Fixing the off-by-one"},
    {"content": "Add a regression test", "status": "pending"},
    {"content": "Rewrite the lexer", "status": "cancelled"},
]


def test_flags() -> None:
    assert [t.name for t in TODO_TOOLS] == ["todo_write", "todo_read"]
    assert write_tool.approval == read_tool.approval == "none"
    assert not write_tool.mutates and not read_tool.mutates  # the plan, never the project
    assert write_tool.phase(None) == "Planning" and read_tool.phase(None) == "Planning"


async def test_write_replaces_the_list_and_emits_it(ctx: ToolContext, events: list[Event]) -> None:
    held = ctx.todos
    output = await write(ctx, PLAN)
    expected = [
        TodoItem("Read the parser", "completed"),
        TodoItem("Fix the off-by-one", "in_progress", "Fixing the off-by-one"),
        TodoItem("Add a regression test", "pending"),
        TodoItem("Rewrite the lexer", "cancelled"),
    ]
    assert ctx.todos == expected and ctx.todos is held  # replaced in place
    assert events == [TodosChanged(tuple(expected))]
    assert output.splitlines() == [
        "Todo list updated (4 todos · 1 done):",
        "[x] Read the parser",
        "[>] Fix the off-by-one",
        "[ ] Add a regression test",
        "[-] Rewrite the lexer",
    ]
    await write(ctx, [{"content": "Only this", "status": "pending"}])
    assert ctx.todos == [TodoItem("Only this", "pending")]
    assert len(events) == 2
    json.dumps(events[-1].to_dict())  # what stream-json writes


async def test_two_items_in_progress_are_refused(ctx: ToolContext, events: list[Event]) -> None:
    await write(ctx, PLAN)
    with pytest.raises(ToolError, match=r"Todos 1, 2 are all in_progress.*not changed"):
        await write(ctx, [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}])
    assert len(ctx.todos) == 4 and len(events) == 1


async def test_empty_content_is_refused(ctx: ToolContext, events: list[Event]) -> None:
    with pytest.raises(ToolError, match="Todo 2 has empty content"):
        await write(ctx, [{"content": "fine", "status": "pending"}, {"content": "   ", "status": "pending"}])
    assert ctx.todos == [] and events == []


async def test_content_and_active_form_are_trimmed(ctx: ToolContext) -> None:
    await write(ctx, [{"content": "  Fix it \n", "status": "in_progress", "active_form": "  "}])
    assert ctx.todos == [TodoItem("Fix it", "in_progress", None)]


async def test_clearing_the_list(ctx: ToolContext, events: list[Event]) -> None:
    await write(ctx, PLAN)
    assert await write(ctx, []) == "Todo list cleared."
    assert ctx.todos == [] and events[-1] == TodosChanged(())


async def test_read(ctx: ToolContext) -> None:
    empty = await read_tool.run(read_tool.Args(), ctx)
    assert empty.output == "No todos yet." and empty.summary == "no todos yet"
    await write(ctx, PLAN)
    current = await read_tool.run(read_tool.Args(), ctx)
    assert current.output == render_todos(ctx.todos)
    assert current.output.startswith("[x] Read the parser\n[>] Fix the off-by-one")
    assert current.summary == "4 todos · 1 done"


def test_bad_status_is_caught_by_the_schema() -> None:
    registry = ToolRegistry(list(TODO_TOOLS))
    call = registry.prepare("todo_write", json.dumps({"todos": [{"content": "x", "status": "doing"}]}))
    assert call.error is not None and "todos.0.status" in call.error
    call = registry.prepare("todo_write", json.dumps({"todos": [{"content": "x", "status": "pending",
                                                                "priority": "high"}]}))
    assert call.error is not None and "unknown parameter" in call.error
    schema = registry.schemas()[0]["function"]["parameters"]
    assert "todos" in schema["required"]

"""anvil's events in ACP's words: message and thought chunks, tool calls and their updates, the plan.

Pure translations (no connection here), so each can be checked on its own. Paths in ACP are absolute, so
what anvil shows relative to the project is made absolute against its root.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from acp import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
)

from anvil.core.events import (
    ApprovalAnswered,
    AssistantMessage,
    Event,
    TextDelta,
    TodoItem,
    TodosChanged,
    ToolCallStarted,
    ToolResultEvent,
    TurnEnded,
)
from anvil.core.subagents.task_tool import SubagentEvent
from anvil.frontend.lines import describe
from anvil.frontend.prompt import CONTINUE_MESSAGE

Update = AgentMessageChunk | AgentThoughtChunk | ToolCallStart | ToolCallProgress | AgentPlanUpdate
#: the tool kinds ACP knows; anvil's tools declare theirs in the same words
ACP_KINDS = frozenset({"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode",
                       "other"})
#: why a turn ended, as ACP's stop reasons (an error or a stuck loop is told in the text, then the turn ends)
STOP_REASONS = {"done": "end_turn", "interrupted": "cancelled", "max_iterations": "max_turn_requests",
                "stuck": "end_turn", "error": "end_turn", "dropped": "end_turn"}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_PLAN_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}


class TurnUpdates:
    """The updates one turn's events make. Keeps what it needs between events: whether the reply streamed, and
    the ids a sub-agent's calls are shown under (each its own call, named after the task)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._streamed = False
        self._nested: dict[str, str] = {}

    def call_id(self, call_id: str) -> str:
        """The id a call is shown under: a sub-agent's calls get their task call's id in front."""
        return self._nested.get(call_id, call_id)

    def of(self, event: Event) -> list[Update]:
        match event:
            case TextDelta(text=text):
                self._streamed = True
                return [update_agent_message_text(text)] if text else []
            case AssistantMessage(text=text):
                streamed, self._streamed = self._streamed, False
                return [update_agent_message_text(text)] if text and not streamed else []
            case ToolCallStarted():
                return [tool_call_start(event, self.root)]
            case ApprovalAnswered(allow=True, call_id=call_id):
                return [update_tool_call(call_id, status="in_progress")]
            case ToolResultEvent():
                return [tool_call_done(event, self.root)]
            case TodosChanged(todos=todos):
                return [plan_of(todos)]
            case TurnEnded(reason="interrupted"):
                return []  # the client cancelled: it knows
            case SubagentEvent():
                return self._nested_updates(event)
        return said(event)

    def _nested_updates(self, event: SubagentEvent) -> list[Update]:
        """A sub-agent's calls as calls of their own (its approvals refer to them); its replies as thoughts."""
        inner = event.inner
        match inner:
            case ToolCallStarted(call_id=call_id):
                shown = self._nested.setdefault(call_id, f"{event.call_id}/{call_id}")
                start = tool_call_start(inner, self.root)
                title = f"{event.description}: {start.title}"
                return [start.model_copy(update={"tool_call_id": shown, "title": title})]
            case ApprovalAnswered(allow=True, call_id=call_id):
                return [update_tool_call(self.call_id(call_id), status="in_progress")]
            case ToolResultEvent(call_id=call_id):
                return [tool_call_done(inner, self.root).model_copy(update={"tool_call_id": self.call_id(call_id)})]
            case AssistantMessage(text=text) if text.strip():
                return [update_agent_thought_text(f"{event.description}: {text.strip()}\n")]
        return []


def said(event: Event) -> list[Update]:
    """The one-liner every front end shows for an event: progress (retries, compaction) as a thought, what the
    person must know (notices, errors, why a turn stopped) as a quoted line of the reply."""
    line = describe(event, go_on=CONTINUE_MESSAGE)
    if line is None:
        return []
    if line.kind in {"retry", "compaction"}:
        return [update_agent_thought_text(line.text + "\n")]
    mark = "⚠ " if line.kind == "error" else ""
    return [update_agent_message_text(f"\n\n> {mark}{line.text}\n\n")]


def acp_kind(kind: str) -> Any:
    return kind if kind in ACP_KINDS else "other"


def tool_call_start(event: ToolCallStarted, root: Path) -> ToolCallStart:
    return start_tool_call(event.call_id, event.phase or event.name, kind=acp_kind(event.kind), status="pending",
                           locations=locations(event.args, root), raw_input=event.args)


def tool_call_done(event: ToolResultEvent, root: Path) -> ToolCallProgress:
    """The finished call: a diff for an edit (with where it starts), else what the model read."""
    content: list[ContentToolCallContent | FileEditToolCallContent] = []
    where = None
    if event.diff:
        content = diff_contents(event.diff, root)
        where = diff_locations(event.diff, root)
    if not content:
        content = [tool_content(text_block(fenced(event.output)))] if event.output.strip() else []
    return update_tool_call(event.call_id, status="completed" if event.ok else "failed", content=content,
                            locations=where, raw_output={"ok": event.ok, "summary": event.summary})


def locations(args: dict[str, Any], root: Path) -> list[ToolCallLocation] | None:
    """The file a call is about (``path``, or ``file_path``), with the line it starts at when it says."""
    path = args.get("path") or args.get("file_path")
    if not isinstance(path, str) or not path.strip():
        return None
    line = args.get("offset")
    return [ToolCallLocation(path=str((root / path).resolve()), line=line if isinstance(line, int) else None)]


def diff_contents(diff: str, root: Path) -> list[FileEditToolCallContent]:
    """A unified diff as ACP diff content: one entry per hunk, its old and new lines (a new file has no old)."""
    path, new_file = _diff_path(diff, root)
    if path is None:
        return []
    contents = []
    for old, new in _hunks(diff):
        contents.append(tool_diff_content(path, "".join(new), None if new_file else "".join(old)))
    return contents


def diff_locations(diff: str, root: Path) -> list[ToolCallLocation] | None:
    path, _ = _diff_path(diff, root)
    if path is None:
        return None
    first = next((int(m.group(1)) for line in diff.splitlines() if (m := _HUNK.match(line))), None)
    return [ToolCallLocation(path=path, line=first)]


def _diff_path(diff: str, root: Path) -> tuple[str | None, bool]:
    new_file = False
    for line in diff.splitlines()[:4]:
        if line.startswith("--- /dev/null"):
            new_file = True
        if line.startswith("+++ "):
            label = line[4:].strip()
            label = label[2:] if label.startswith("b/") else label
            return str((root / label).resolve()), new_file
    return None, new_file


def _hunks(diff: str) -> list[tuple[list[str], list[str]]]:
    hunks: list[tuple[list[str], list[str]]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("@@"):
            hunks.append(([], []))
            continue
        if not hunks or line.startswith("\\"):  # headers; "\ No newline at end of file"
            continue
        old, new = hunks[-1]
        sign, text = line[:1], line[1:]
        if sign in {" ", "-"}:
            old.append(text)
        if sign in {" ", "+"}:
            new.append(text)
    return hunks


def plan_of(todos: tuple[TodoItem, ...] | list[TodoItem]) -> AgentPlanUpdate:
    """The todo list as ACP's plan (every entry, each time); cancelled items are no longer part of the plan."""
    entries = [plan_entry(item.content, status=_PLAN_STATUS[item.status])  # type: ignore[arg-type]
               for item in todos if item.status in _PLAN_STATUS]
    return update_plan(entries)


def fenced(text: str) -> str:
    """``text`` as a Markdown code block, fenced with more backticks than it holds in a row."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip()}\n{fence}"

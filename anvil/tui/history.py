"""A resumed session's messages in the transcript: the newest batch at once, older ones as the person scrolls up.

Mounting the whole history (every reply a Markdown tree) made ``--resume`` of a 1,000-turn session take
seconds and tens of megabytes; benchmarks/README.md has the figures. So the messages become entry
*factories* here, in one pass, and the transcript builds widgets from them a batch at a time
(:meth:`~anvil.tui.transcript.Transcript.set_backlog`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from anvil.core.events import ToolCallStarted, ToolResultEvent
from anvil.tui.transcript import (
    HISTORY_BATCH,
    AssistantEntry,
    Entry,
    EntryFactory,
    ThinkingEntry,
    ToolEntry,
    Transcript,
    UserEntry,
)


@dataclass(frozen=True)
class HistoryEntry:
    """Builds one entry of a resumed session; ``text`` is what it will show, so search can look before the
    entry is mounted (:meth:`Transcript.backlog_match`)."""

    text: str
    build: Callable[[], Entry]

    def __call__(self) -> Entry:
        return self.build()


def history_entries(messages: list[dict[str, Any]]) -> list[EntryFactory]:
    """One factory per transcript entry the messages show, oldest first (the only message→entry mapping:
    the first batch and every older one are built from its result)."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    factories: list[EntryFactory] = []
    for message in messages:
        role = message.get("role")
        content = str(message.get("content") or "")
        if role == "user":
            factories.append(HistoryEntry(content, partial(UserEntry, content)))
        elif role == "assistant":
            reasoning = reasoning_text(message)
            if reasoning.strip():
                factories.append(HistoryEntry(reasoning, partial(ThinkingEntry, reasoning)))
            if content.strip():
                factories.append(HistoryEntry(content, partial(AssistantEntry, content)))
            for call in message.get("tool_calls") or []:
                result = results.get(call.get("id"))
                fn = call.get("function", {})
                shown = f"{fn.get('name', '')} {fn.get('arguments', '')} {(result or {}).get('content', '')}"
                factories.append(HistoryEntry(shown, partial(_tool_entry, call, result)))
    return factories


def reasoning_text(message: dict[str, Any]) -> str:
    """The reasoning an assistant message kept: its reasoning text, or its thinking blocks' text."""
    text = message.get("reasoning_content")
    if isinstance(text, str) and text:
        return text
    blocks = message.get("thinking_blocks") or []
    return "\n\n".join(str(b.get("thinking", "")) for b in blocks if isinstance(b, dict) and b.get("thinking"))


def _tool_entry(call: dict[str, Any], result: dict[str, Any] | None) -> ToolEntry:
    fn = call.get("function", {})
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        args = {}
    started = ToolCallStarted(call.get("id", ""), fn.get("name", "?"), args if isinstance(args, dict) else {}, "")
    entry = ToolEntry(started)
    if result is not None:
        entry.finish(ToolResultEvent(entry.call_id, entry.name_, True, "", str(result.get("content"))))
    return entry


def show_history(transcript: Transcript, messages: list[dict[str, Any]], *, shown: int = HISTORY_BATCH) -> None:
    """Show the newest ``shown`` entries of a resumed session; scrolling to the top loads the rest."""
    transcript.set_backlog(history_entries(messages), shown=shown)

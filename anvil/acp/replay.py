"""A resumed session's conversation as the updates that show it again (session/load): the person's messages,
the replies, and every tool call with what it returned."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import (
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_tool_call,
    update_user_message_text,
)

from anvil.acp.updates import Update, acp_kind, fenced, locations

#: what a front end appended to the typed message: the model needs it, the replay shows what was typed
_ATTACHED = ("\n\nAttached files:\n", "\n\nAttached from the editor:\n")


def replay(messages: list[dict[str, Any]], describe: Callable[[str, str], tuple[str, str]],
           root: Path) -> list[Update]:
    """``describe(name, arguments)`` gives a call's label and kind, as it was shown when it ran."""
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    updates: list[Update] = []
    for message in messages:
        role = message.get("role")
        text = _text(message.get("content"))
        if role == "user" and text.strip():
            updates.append(update_user_message_text(_typed(text)))
        elif role == "assistant":
            if text.strip():
                updates.append(update_agent_message_text(text))
            for call in message.get("tool_calls") or []:
                updates += _call(call, results.get(call.get("id")), describe, root)
    return updates


def _call(call: dict[str, Any], result: dict[str, Any] | None, describe: Callable[[str, str], tuple[str, str]],
          root: Path) -> list[Update]:
    function = call.get("function") or {}
    name, arguments = str(function.get("name", "")), str(function.get("arguments") or "")
    call_id = str(call.get("id", ""))
    label, kind = describe(name, arguments)
    try:
        args = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        args = {}
    args = args if isinstance(args, dict) else {}
    started = start_tool_call(call_id, label, kind=acp_kind(kind), status="completed",
                              locations=locations(args, root), raw_input=args)
    if result is None:
        return [started]
    output = _text(result.get("content"))
    content = [tool_content(text_block(fenced(output)))] if output.strip() else None
    return [started, update_tool_call(call_id, status="completed", content=content)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _typed(text: str) -> str:
    cut = min((i for marker in _ATTACHED if (i := text.find(marker)) >= 0), default=len(text))
    return text[:cut]

"""The conversation as the model sees it: a flat list of chat messages, system prompt first, mirrored into
the session file together with the events the loop records."""

from __future__ import annotations

from typing import Any, TypeVar

from anvil.core.events import AssistantMessage, Event, ToolCall
from anvil.core.model.protocol import Completion
from anvil.core.session.store import Session

E = TypeVar("E", bound=Event)


class History:
    def __init__(self, messages: list[dict[str, Any]], session: Session | None) -> None:
        self.messages = messages
        self.session = session

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if self.session is not None:
            self.session.append({"t": "message", "message": message})

    def add_reply(self, completion: Completion) -> AssistantMessage:
        """The model's reply, with its tool calls; returns the (recorded) event that shows it."""
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        if completion.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in completion.tool_calls]
        self.add(message)
        return self.record(AssistantMessage(completion.text, tuple(completion.tool_calls)))

    def add_partial(self, parts: list[str]) -> None:
        """The text of a reply cut short (a failure or an interrupt), so the model knows what it said."""
        if parts:
            self.add({"role": "assistant", "content": "".join(parts) + "\n\n[interrupted]"})

    def add_tool_result(self, call: ToolCall, output: str) -> None:
        self.add({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": output})

    def record(self, event: E) -> E:
        if self.session is not None:
            self.session.append({"t": "event", "event": event.to_dict()})
        return event

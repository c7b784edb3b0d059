"""The conversation as the model sees it: a flat list of chat messages, system prompt first, mirrored into
the session file together with the events the loop records."""

from __future__ import annotations

from typing import Any, TypeVar

from anvil.core.events import AssistantMessage, Event, Notice, ToolCall
from anvil.core.model.protocol import Completion
from anvil.core.session.checkpoints import CheckpointStore
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

    def open_calls(self) -> list[ToolCall]:
        """The newest reply's tool calls that have no result yet (a turn that broke off in the middle)."""
        answered: set[str] = set()
        for message in reversed(self.messages):
            if message.get("role") == "tool":
                answered.add(str(message.get("tool_call_id")))
            elif message.get("role") == "assistant":
                calls = message.get("tool_calls") or []
                return [ToolCall(str(c.get("id")), (c.get("function") or {}).get("name", ""),
                                 (c.get("function") or {}).get("arguments", ""))
                        for c in calls if str(c.get("id")) not in answered]
            else:
                break
        return []

    def storage_notices(self, checkpoints: CheckpointStore) -> list[Notice]:
        """What the session file and the checkpoints could not write (or write again), told once each."""
        told = self.session.trouble.take() if self.session is not None else []
        return [Notice(message) for message in [*told, *checkpoints.take_notices()]]

    def record(self, event: E) -> E:
        if self.session is not None:
            self.session.append({"t": "event", "event": event.to_dict()})
        return event

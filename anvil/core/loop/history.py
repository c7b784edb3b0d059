"""The conversation as the model sees it: a flat list of chat messages, system prompt first, mirrored into
the session file together with the events the loop records.

An assistant message keeps what its provider needs back with it, under litellm's names (``thinking_blocks``
with their signatures, ``reasoning_content``, ``provider_specific_fields``, and each tool call's own
``provider_specific_fields``): in memory and in the session, so that it survives a resume. The model adapter
decides what of it each provider is sent."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from anvil.core.events import AssistantMessage, Event, Notice, ToolCall
from anvil.core.model.protocol import Completion
from anvil.core.session.checkpoints import CheckpointStore
from anvil.core.session.store import Session
from anvil.core.session.trouble import WriteTrouble

E = TypeVar("E", bound=Event)
#: what ends the text of a reply a dropped connection cut short, in the history the model reads
DROPPED_MARK = "[the connection to the provider dropped here]"


class History:
    def __init__(self, messages: list[dict[str, Any]], session: Session | None) -> None:
        self.messages = messages
        self.session = session

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if self.session is not None:
            self.session.append({"t": "message", "message": message})

    def add_reply(self, completion: Completion, *, placeholder: str = "", continues: bool = False) -> AssistantMessage:
        """The model's reply, with its tool calls and provider state; returns the (recorded) event that shows it.
        ``placeholder`` stands in for the text of a reply that has none (and no tool calls); ``continues``: the
        reply stopped at the output limit and the next one goes on with its text."""
        message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
        call_fields = completion.replay.get("tool_call_fields") or {}
        if completion.tool_calls:
            message["tool_calls"] = [_call_message(c, call_fields.get(c.id)) for c in completion.tool_calls]
        elif not completion.text and placeholder:
            message["content"] = placeholder
        message.update((k, v) for k, v in completion.replay.items() if k != "tool_call_fields")
        self.add(message)
        return self.record(AssistantMessage(completion.text, tuple(completion.tool_calls), completion.reasoning,
                                            continues))

    def add_partial(self, parts: list[str], mark: str = "[interrupted]") -> None:
        """The text of a reply cut short (a failure, an interrupt, a dropped connection: ``mark`` says which), so
        the model knows what it said."""
        if parts:
            self.add({"role": "assistant", "content": "".join(parts) + "\n\n" + mark})

    def cut_by_dropped_connection(self) -> bool:
        """The conversation ends with a reply a dropped connection cut short: the model can go on with it."""
        last = self.messages[-1] if len(self.messages) > 1 else {}
        content = last.get("content")
        return last.get("role") == "assistant" and isinstance(content, str) and content.endswith(DROPPED_MARK)

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

    def storage_notices(self, checkpoints: CheckpointStore, others: Iterable[WriteTrouble] = ()) -> list[Notice]:
        """What the session file, the checkpoints and ``others`` (the command logs) could not write (or write
        again), told once each."""
        told = self.session.trouble.take() if self.session is not None else []
        told += checkpoints.take_notices()
        for trouble in others:
            told += trouble.take()
        return [Notice(message) for message in told]

    def record(self, event: E) -> E:
        if self.session is not None:
            self.session.append({"t": "event", "event": event.to_dict()})
        return event


def _call_message(call: ToolCall, fields: dict[str, Any] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"id": call.id, "type": "function",
                               "function": {"name": call.name, "arguments": call.arguments}}
    if fields:
        message["provider_specific_fields"] = fields
    return message

"""The model protocol the loop calls, and the records a model call produces.

A model streams ``str`` text deltas, :class:`~anvil.core.events.Retrying` notices, and finally one
:class:`Completion` (the assembled message with its tool calls, usage and cost). Failures are raised as
:class:`~anvil.core.model.errors.ModelError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from anvil.core.events import Retrying, ToolCall


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    cost: float | None = None
    finish_reason: str | None = None


StreamItem = str | Retrying | Completion


class Model(Protocol):
    name: str

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        """Stream one reply to ``messages``, offering ``tools``."""
        ...

    def context_window(self) -> int | None:
        """The model's input window in tokens, when known."""
        ...

    def preflight(self) -> str | None:
        """A problem that would make every call fail (unknown provider, missing key), said up front; None if none.

        Blocking (it may import litellm): front ends call it in a thread."""
        ...

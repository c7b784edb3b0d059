"""The model protocol the loop calls, and the records a model call produces.

A model streams ``str`` text deltas, :class:`~anvil.core.events.ReasoningDelta` pieces of its reasoning,
:class:`~anvil.core.events.Retrying` notices, and finally one :class:`Completion` (the assembled message with
its tool calls, usage and cost, and what the provider needs back with it). Failures are raised as
:class:`~anvil.core.model.errors.ModelError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args

from anvil.core.events import ReasoningDelta, Retrying, ToolCall

ReasoningLevel = Literal["off", "low", "medium", "high"]
REASONING_LEVELS: tuple[ReasoningLevel, ...] = get_args(ReasoningLevel)


@dataclass
class Reasoning:
    """How much the model should reason before answering: an effort level, and for providers that take one
    (Anthropic, Gemini) a thinking budget in tokens, which then wins over the level's default budget."""

    level: ReasoningLevel = "off"
    budget: int | None = None

    @property
    def on(self) -> bool:
        return self.level != "off"


@dataclass
class Usage:
    #: every input token, those read from and written to the provider's prompt cache included
    prompt_tokens: int = 0
    #: every output token, reasoning included
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    cost: float | None = None
    finish_reason: str | None = None
    #: the reasoning the provider showed ("" when none)
    reasoning: str = ""
    #: what the provider needs back with this reply, as litellm names it on an assistant message:
    #: ``thinking_blocks`` (signed), ``reasoning_content``, ``provider_specific_fields``, and per tool call id
    #: under ``tool_call_fields`` the call's own ``provider_specific_fields`` (Gemini's thought signatures)
    replay: dict[str, Any] = field(default_factory=dict)


StreamItem = str | ReasoningDelta | Retrying | Completion


class Model(Protocol):
    name: str
    reasoning: Reasoning

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
               max_output_tokens: int | None = None) -> AsyncIterator[StreamItem]:
        """Stream one reply to ``messages``, offering ``tools``; ``max_output_tokens`` overrides the output limit."""
        ...

    def context_window(self) -> int | None:
        """The model's input window in tokens, when known."""
        ...

    def larger_output_limit(self, cut: Completion) -> int | None:
        """A larger output limit for retrying a reply that stopped at the limit (``cut``), or None when there is
        none to try (the model's own maximum was reached)."""
        ...

    def reasons(self) -> bool | None:
        """Whether the model can reason (thinking, reasoning effort); None when unknown."""
        ...

    def accepts_images(self) -> bool:
        """Whether messages may carry images for this model (images tools return are shown to it then)."""
        ...

    def preflight(self) -> str | None:
        """A problem that would make every call fail (unknown provider, missing key), said up front; None if none.

        Blocking (it may import litellm): front ends call it in a thread."""
        ...

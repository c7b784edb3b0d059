"""Context accounting: how full the model's window is, for the gauge and for compaction.

The truth is the provider's usage: after each model call, prompt + completion tokens is what the
history weighs. Between calls (tool results, steering, a resumed session before its first call) the
meter adds the new messages counted with litellm's tokenizer for the model (offline), or 4 characters
a token when that is unavailable. Counting is incremental: each message is counted once, when it
joins the history, so a step costs the same at 1k or 100k tokens of history. A compaction replaces
the history; the meter notices (identity check) and counts the new, short history once.

The *usable* window is the model's input window minus a reserve for the reply: 10% of the window,
at most 16k tokens (a 200k window keeps 184k for the conversation, an 8k local model keeps 7.2k).
Gauge fractions and the compaction threshold are both relative to the usable window.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from anvil.core.events import ContextUsage
from anvil.core.model.litellm_model import load_litellm
from anvil.core.model.protocol import Usage

CHARS_PER_TOKEN = 4  # the provider-neutral fallback when no tokenizer is available
DEFAULT_WINDOW = 128_000  # when neither the config nor litellm knows the model
REPLY_RESERVE_FRACTION = 0.10
REPLY_RESERVE_MAX = 16_000
MESSAGE_OVERHEAD = 4  # role and separators, per message, in the fallback estimate
# litellm's counter adds 3 tokens "priming the reply" to every list it counts; counting one message at a
# time would add them once per message, so they are taken off each message and added back once.
REPLY_PRIMING = 3


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def usable_window(window: int) -> int:
    return window - min(REPLY_RESERVE_MAX, int(window * REPLY_RESERVE_FRACTION))


def _message_chars(message: dict[str, Any]) -> int:
    size = len(str(message.get("content") or ""))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        size += len(str(function.get("name", ""))) + len(str(function.get("arguments", "")))
    return size


class TokenCounter:
    """Counts messages with litellm's tokenizer for ``model`` when ``use_litellm``, else chars/4.

    litellm is only asked once it has been imported (the first model call does that), so counting never
    blocks the event loop on a multi-second import; until then, and whenever the tokenizer fails, the
    estimate stands in.
    """

    def __init__(self, model: str, *, use_litellm: bool = True) -> None:
        self.model = model
        self.use_litellm = use_litellm
        self._tools_key: tuple[int, int] | None = None
        self.tools_tokens = 0

    async def ready(self) -> None:
        """Import litellm off the event loop when this counter will use it (a no-op once imported)."""
        if self.use_litellm and "litellm" not in sys.modules:
            await asyncio.to_thread(load_litellm)

    def _litellm(self) -> Any:
        if not self.use_litellm:
            return None
        if "litellm" not in sys.modules:
            return None
        return load_litellm()  # the adapter's instance: configured quiet, with the offline cost map

    def count_message(self, message: dict[str, Any]) -> int:
        litellm = self._litellm()
        if litellm is not None:
            try:
                return max(1, int(litellm.token_counter(model=self.model, messages=[message])) - REPLY_PRIMING)
            except Exception:
                self.use_litellm = False  # a tokenizer that failed once fails again: estimate from now on
        return (_message_chars(message) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + MESSAGE_OVERHEAD

    def count_text(self, text: str) -> int:
        litellm = self._litellm()
        if litellm is not None:
            try:
                return int(litellm.token_counter(model=self.model, text=text))
            except Exception:
                self.use_litellm = False
        return estimate_tokens(text)

    def count_tools(self, tools: list[dict[str, Any]]) -> int:
        """Tool schemas, counted once per schema list (the registry builds its list once)."""
        if self._tools_key != (id(tools), len(tools)):
            self._tools_key = (id(tools), len(tools))
            self.tools_tokens = self._count_tools(tools) if tools else 0
        return self.tools_tokens

    def _count_tools(self, tools: list[dict[str, Any]]) -> int:
        litellm = self._litellm()
        if litellm is not None:
            # litellm renders schemas the way providers inject them: count that, not the JSON. The probe
            # has a system message because anvil's requests always do (litellm takes 4 tokens off then).
            try:
                probe = [{"role": "system", "content": ""}]
                with_tools = litellm.token_counter(model=self.model, messages=probe, tools=tools)
                return max(0, int(with_tools) - int(litellm.token_counter(model=self.model, messages=probe)))
            except Exception:
                self.use_litellm = False
        return estimate_tokens(json.dumps(tools))


class ContextMeter:
    """Tokens in use against the usable window, kept up to date message by message.

    ``window`` may be a callable: asking litellm for it imports litellm, which must wait for a model call.
    """

    def __init__(self, window: int | Callable[[], int | None], counter: TokenCounter | None = None) -> None:
        self._window = window
        self.counter = counter or TokenCounter("", use_litellm=False)
        self.used = 0
        self.estimated = True
        self._counted: list[tuple[dict[str, Any], int]] = []  # (message, tokens), parallel to the history
        self._total = 0  # sum of the counted messages
        self._anchor: tuple[int, int] | None = None  # (tokens, history length) of the last real usage
        self.tools_tokens = 0

    @property
    def window(self) -> int:
        """The model's whole input window."""
        if callable(self._window):
            self._window = self._window() or DEFAULT_WINDOW
        return self._window

    @property
    def usable(self) -> int:
        """The window minus the reply reserve: what the conversation may fill."""
        return usable_window(self.window)

    def message_tokens(self, messages: list[dict[str, Any]]) -> list[int]:
        """Per-message counts of ``messages`` (synced first): compaction plans with them."""
        self._sync(messages)
        return [tokens for _, tokens in self._counted]

    def _sync(self, messages: list[dict[str, Any]]) -> None:
        done = len(self._counted)
        # The history only grows between compactions; anything else means it was replaced: count afresh.
        if done > len(messages) or (done and messages[done - 1] is not self._counted[done - 1][0]):
            self.reset()
            done = 0
        for message in messages[done:]:
            tokens = self.counter.count_message(message)
            self._counted.append((message, tokens))
            self._total += tokens

    def set_window(self, window: int | Callable[[], int | None]) -> None:
        """A new model: its window (resolved lazily, like the first) and a fresh count with its tokenizer."""
        self._window = window
        self.reset()

    def reset(self) -> None:
        """Forget every count (after a compaction replaced the history)."""
        self._counted.clear()
        self._total = 0
        self._anchor = None

    def measure(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """Tokens the next request would send: the last real usage plus what joined since, or a full count."""
        self._sync(messages)
        if tools is not None:
            self.tools_tokens = self.counter.count_tools(tools)
        if self._anchor is not None and self._anchor[1] <= len(messages):
            tokens, length = self._anchor
            added = sum(t for _, t in self._counted[length:])
            self.used, self.estimated = tokens + added, length != len(messages)
        else:
            self.used, self.estimated = self._total + self.tools_tokens + REPLY_PRIMING, True
        return self.used

    def event(self) -> ContextUsage:
        window = self.usable
        fraction = self.used / window if window else 0.0
        return ContextUsage(self.used, window, round(fraction, 4), self.estimated)

    def after_response(self, usage: Usage | None, messages: list[dict[str, Any]]) -> ContextUsage:
        """After a model call whose reply is the last message: the provider's count, when it gave one."""
        self._sync(messages)
        if usage is not None and usage.prompt_tokens:
            self._anchor = (usage.prompt_tokens + usage.completion_tokens, len(messages))
        self.measure(messages)
        return self.event()

    def after_message(self, messages: list[dict[str, Any]]) -> ContextUsage:
        """After a tool result (or any message) joined: estimated until the next response."""
        self.measure(messages)
        return self.event()

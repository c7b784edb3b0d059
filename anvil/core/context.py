"""Context accounting: how full the model's window is, for the gauge.

After each model call the provider's usage is the truth (prompt + completion tokens). Between calls the
meter adds an estimate for each tool result, marked as such, so the gauge moves while tools run without
recounting the whole history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anvil.core.events import ContextUsage
from anvil.core.model import Usage

CHARS_PER_TOKEN = 4  # a rough, provider-neutral estimate, used only until the next real usage


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


DEFAULT_WINDOW = 128_000


class ContextMeter:
    """``window`` may be a callable: asking litellm for it imports litellm, which must wait for a model call."""

    def __init__(self, window: int | Callable[[], int | None]) -> None:
        self._window = window
        self.used = 0

    @property
    def window(self) -> int:
        if callable(self._window):
            self._window = self._window() or DEFAULT_WINDOW
        return self._window

    def _event(self, estimated: bool) -> ContextUsage:
        fraction = self.used / self.window if self.window else 0.0
        return ContextUsage(self.used, self.window, round(fraction, 4), estimated)

    def after_response(self, usage: Usage | None, messages: list[dict[str, Any]]) -> ContextUsage:
        if usage is not None and usage.prompt_tokens:
            self.used = usage.prompt_tokens + usage.completion_tokens
            return self._event(estimated=False)
        self.used = sum(estimate_tokens(str(m.get("content") or "")) for m in messages)
        return self._event(estimated=True)

    def after_tool_result(self, output: str) -> ContextUsage:
        self.used += estimate_tokens(output)
        return self._event(estimated=True)

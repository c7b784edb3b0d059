"""A deterministic model that replays a script: for tests, demos and benchmarks.

A script is a list of turns; each turn is what the model "says" on one call:

    {"text": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": {"path": "app.py"}}]}
    {"reasoning": "The bug is in the loop.", "text": "Found it."}   # reasoning streams first
    {"text": "A long ans", "finish_reason": "length"}   # a reply cut off at the output limit
    {"error": "rate limited", "retryable": true}   # raise a ModelError instead of answering

It streams text in small chunks, like a real provider, and reports usage estimated from the
request size so gauges and totals move (``"usage"`` and ``"cost"`` on a turn set them instead). When the
script runs out it says so instead of failing.

A script may also be an object with ``cases``, for a run that is resumed in a new process (a blocked task
answered with ``anvil answer``): at its first call the model takes the first case whose ``when`` text appears
in the messages it was sent (the system prompt included); a case without ``when`` always fits:

    {"cases": [{"when": "Previous clarifications", "turns": [...]}, {"turns": [...]}]}
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any

from anvil.core.events import ReasoningDelta, ToolCall
from anvil.core.model.errors import ModelError
from anvil.core.model.protocol import Completion, Reasoning, StreamItem, Usage


class ScriptedModel:
    def __init__(self, turns: list[dict[str, Any]], *, name: str = "scripted", chunk_chars: int = 6,
                 delay: float = 0.0, window: int = 200_000, images: bool = False,
                 cases: list[dict[str, Any]] | None = None) -> None:
        self.name = name
        self.images = images
        self.turns = list(turns)
        self.cases = cases  # chosen from at the first call (see the module's docstring)
        self.calls: list[list[dict[str, Any]]] = []  # the messages of every call, for assertions
        self.output_limits: list[int | None] = []  # the max_output_tokens of every call
        self.reasoning = Reasoning()
        self.chunk_chars = chunk_chars
        self.delay = delay
        self.window = window
        self._next = 0

    @classmethod
    def from_spec(cls, spec: str) -> ScriptedModel:
        """``scripted`` (the bundled demo) or ``scripted:PATH`` (a JSON script file)."""
        _, _, path = spec.partition(":")
        if not path:
            text = resources.files("anvil.core.model").joinpath("scripts/demo.json").read_text(encoding="utf-8")
            return cls(json.loads(text))
        try:
            turns = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
        except OSError as exc:
            raise ModelError(f"Cannot read the model script {path}: {exc.strerror}. Check the path.") from exc
        except json.JSONDecodeError as exc:
            raise ModelError(f"The model script {path} is not valid JSON: {exc}. Fix it and retry.") from exc
        if isinstance(turns, dict) and _valid_cases(turns.get("cases")):
            return cls([], cases=turns["cases"])
        if not isinstance(turns, list):
            raise ModelError(f"The model script {path} must be a JSON list of turns, or an object with "
                             '"cases": [{"when": TEXT, "turns": [...]}, ...].')
        return cls(turns)

    def context_window(self) -> int | None:
        return self.window

    def accepts_images(self) -> bool:
        return self.images

    def preflight(self) -> str | None:
        return None  # a script needs no key and no provider

    def reasons(self) -> bool | None:
        return True  # a script says whatever reasoning it was given

    def larger_output_limit(self, cut: Completion) -> int | None:
        used = cut.usage.completion_tokens if cut.usage else 0
        return 2 * max(used, 1)

    @property
    def remaining(self) -> int:
        return len(self.turns) - self._next

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *,
                     max_output_tokens: int | None = None) -> AsyncIterator[StreamItem]:
        self.calls.append([dict(m) for m in messages])
        self.output_limits.append(max_output_tokens)
        if self.cases is not None:
            self.turns, self.cases = _choose(self.cases, messages), None
        if self._next < len(self.turns):
            turn = self.turns[self._next]
            self._next += 1
        else:
            turn = {"text": "(The scripted model has nothing more to say.)"}
        if "error" in turn:
            raise ModelError(str(turn["error"]), retryable=bool(turn.get("retryable")),
                             kind=str(turn.get("kind", "error")))
        reasoning = str(turn.get("reasoning", ""))
        for start in range(0, len(reasoning), self.chunk_chars):
            yield ReasoningDelta(reasoning[start:start + self.chunk_chars])
        text = str(turn.get("text", ""))
        for start in range(0, len(text), self.chunk_chars):
            if self.delay:
                await asyncio.sleep(self.delay)
            yield text[start:start + self.chunk_chars]
        calls = []
        for index, call in enumerate(turn.get("tool_calls", [])):
            args = call.get("arguments", {})
            raw = args if isinstance(args, str) else json.dumps(args)
            calls.append(ToolCall(call.get("id") or f"call_{self._next}_{index}", call["name"], raw))
        prompt_chars = sum(len(json.dumps(m)) for m in messages) + len(json.dumps(tools))
        usage = Usage(prompt_tokens=prompt_chars // 4, completion_tokens=max(1, len(text) // 4))
        if "usage" in turn:
            usage = Usage(**turn["usage"])
        finish = turn.get("finish_reason") or ("tool_calls" if calls else "stop")
        replay = {"reasoning_content": reasoning} if reasoning else {}
        yield Completion(text, calls, usage, cost=turn.get("cost"), finish_reason=finish, reasoning=reasoning,
                         replay=replay)


def _valid_cases(cases: Any) -> bool:
    return isinstance(cases, list) and all(isinstance(c, dict) and isinstance(c.get("turns"), list) for c in cases)


def _choose(cases: list[dict[str, Any]], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns of the first case whose ``when`` text is in the messages (none: an empty script)."""
    sent = json.dumps(messages, ensure_ascii=False)
    for case in cases:
        when = case.get("when")
        if not when or json.dumps(str(when), ensure_ascii=False)[1:-1] in sent:
            return list(case["turns"])
    return []

"""Assembling a streamed reply: text and reasoning deltas as they come, tool calls, usage and what the provider
needs back at the end.

litellm has ``stream_chunk_builder`` for this, but it is generic and costs about 130 µs a chunk, all of it
after the last chunk (benchmarks/bench_chunks.py: ~0.26 s at the end of a 2,000-token reply, ~1.3 s for
100 KB of tool-call arguments). Here each chunk costs a few attribute reads while it streams, and the end
is a join: argument pieces are kept in lists, since appending to a growing string copies it every time.

Reasoning arrives as litellm normalises it: ``delta.reasoning_content`` (Anthropic thinking, DeepSeek, Gemini
thoughts, OpenAI-compatible servers), and for Anthropic also ``delta.thinking_blocks``: pieces of thinking
text, then the block's signature, or a whole ``redacted_thinking`` block. Those blocks are put back together
here, signature and all, because the provider checks them when they come back.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from anvil.core.events import ToolCall
from anvil.core.model.protocol import Completion, Usage

#: provider_specific_fields keys that describe one chunk (pieces, citations), not the reply as a whole
_CHUNK_ONLY_FIELDS = frozenset({"thinking_blocks", "citation", "citations", "compaction_delta", "compaction_start"})
#: the keys of an OpenAI delta, a tool-call delta and its function that the assembler reads; any others a
#: provider sends are kept for the replay, as litellm keeps them in ``provider_specific_fields``
_DELTA_KEYS = frozenset({"content", "role", "tool_calls", "function_call", "refusal", "reasoning_content",
                         "reasoning", "audio"})
_CALL_KEYS = frozenset({"index", "id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
#: a tool-call delta that carries only a piece of the arguments
_PIECE_KEYS = frozenset({"index", "function"})
_ARGUMENTS_ONLY = frozenset({"arguments"})
_NOTHING: dict[str, Any] = {}


class _CallParts:
    __slots__ = ("arguments", "fields", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []
        self.fields: dict[str, Any] = {}


class _ThinkingBlocks:
    """Anthropic thinking blocks out of their streamed pieces: text pieces join the open block, a signature
    closes it, a redacted block arrives whole."""

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self._text: list[str] = []
        self._open = False

    def add(self, pieces: list[Any]) -> None:
        for piece in pieces:
            piece = dict(piece) if not isinstance(piece, dict) else piece
            if piece.get("type") == "redacted_thinking":
                self._close()
                self.blocks.append({"type": "redacted_thinking", "data": piece.get("data", "")})
                continue
            if piece.get("thinking"):
                self._open = True
                self._text.append(str(piece["thinking"]))
            if piece.get("signature"):
                self._close(str(piece["signature"]))

    def _close(self, signature: str | None = None) -> None:
        if self._open or signature:
            block: dict[str, Any] = {"type": "thinking", "thinking": "".join(self._text)}
            if signature:
                block["signature"] = signature
            self.blocks.append(block)
        self._text, self._open = [], False

    def build(self) -> list[dict[str, Any]]:
        self._close()  # a block cut off before its signature stays unsigned: litellm leaves it out when sent back
        return self.blocks


class StreamAssembler:
    """Text, reasoning, tool calls (from index-keyed deltas), usage and finish reason out of litellm's chunks."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, _CallParts] = {}
        self.usage: Usage | None = None
        #: litellm's own usage object of the last chunk that carried one, for its cost calculation
        self.raw_usage: Any = None
        self.finish_reason: str | None = None
        self.thinking = _ThinkingBlocks()
        self.fields: dict[str, Any] = {}
        self._reasoning_from = 0

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its text delta ("" when it has none). Its reasoning: :meth:`take_reasoning`."""
        usage = getattr(chunk, "usage", None)
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            self.usage, self.raw_usage = usage_of(usage), usage
        choices = getattr(chunk, "choices", None)
        if not choices:
            return ""
        choice = choices[0]
        finish = getattr(choice, "finish_reason", None)
        if finish:
            self.finish_reason = finish
        delta = getattr(choice, "delta", None)
        if delta is None:
            return ""
        calls = getattr(delta, "tool_calls", None)
        if calls:
            self._add_calls(calls)
        reasoning = getattr(delta, "reasoning_content", None)
        if reasoning:
            self.reasoning.append(str(reasoning))
        blocks = getattr(delta, "thinking_blocks", None)
        if blocks:
            self.thinking.add(blocks)
        fields = getattr(delta, "provider_specific_fields", None)
        if fields:
            self.fields.update((k, v) for k, v in fields.items() if k not in _CHUNK_ONLY_FIELDS)
        content = getattr(delta, "content", None)
        if content:
            self.text.append(content)
            return str(content)
        return ""

    def add_dict(self, chunk: dict[str, Any]) -> str:
        """:meth:`add` for a chunk as the provider's JSON (an OpenAI ``chat.completion.chunk``), read lean
        (:mod:`anvil.core.model.lean_stream`)."""
        usage = chunk.get("usage")
        if usage and usage.get("prompt_tokens") is not None:
            self.raw_usage = usage
            self.usage = usage_of(_namespace(usage))
        choices = chunk.get("choices")
        if not choices:
            return ""
        choice = choices[0]
        finish = choice.get("finish_reason")
        if finish:
            self.finish_reason = finish
        delta = choice.get("delta")
        if not delta:
            return ""
        calls = delta.get("tool_calls")
        if calls:
            self._add_call_dicts(calls)
            if len(delta) == 1:  # tool calls only (their arguments' pieces): nothing else to look for
                return ""
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            self.reasoning.append(str(reasoning))
        if not delta.keys() <= _DELTA_KEYS:  # a provider's own fields are rare (a set test, in C)
            self.fields.update((k, v) for k, v in delta.items() if k not in _DELTA_KEYS and v is not None)
        content = delta.get("content")
        if content:
            self.text.append(content)
            return str(content)
        return ""

    def _add_call_dicts(self, deltas: list[dict[str, Any]]) -> None:
        for call in deltas:
            index = call.get("index")
            if index is None:
                index = len(self.calls)
            parts = self.calls.get(index)
            if parts is None:
                parts = self.calls[index] = _CallParts()
            function = call.get("function") or _NOTHING
            arguments = function.get("arguments")
            if arguments:
                parts.arguments.append(arguments)
            if call.keys() <= _PIECE_KEYS and function.keys() <= _ARGUMENTS_ONLY:
                continue  # a piece of the arguments, nearly every delta of a call: nothing more to read
            if call.get("id"):
                parts.id = call["id"]
            if function.get("name"):
                parts.name = function["name"]
            parts.fields.update((k, v) for k, v in call.items() if k not in _CALL_KEYS and v is not None)
            parts.fields.update((k, v) for k, v in function.items() if k not in _FUNCTION_KEYS and v is not None)

    def take_reasoning(self) -> str:
        """The reasoning that arrived since the last call ("" when none)."""
        if self._reasoning_from == len(self.reasoning):
            return ""
        taken = "".join(self.reasoning[self._reasoning_from:])
        self._reasoning_from = len(self.reasoning)
        return taken

    def _add_calls(self, deltas: list[Any]) -> None:
        for call in deltas:
            index = getattr(call, "index", None)
            if index is None:
                index = len(self.calls)
            parts = self.calls.get(index)
            if parts is None:
                parts = self.calls[index] = _CallParts()
            if getattr(call, "id", None):
                parts.id = call.id
            fields = getattr(call, "provider_specific_fields", None)
            if fields:
                parts.fields.update(fields)
            function = getattr(call, "function", None)
            if function is not None:
                if getattr(function, "name", None):
                    parts.name = function.name
                if getattr(function, "arguments", None):
                    parts.arguments.append(function.arguments)
                fields = getattr(function, "provider_specific_fields", None)
                if fields:
                    parts.fields.update(fields)

    def build(self) -> Completion:
        calls = [ToolCall(parts.id or f"call_{index}", parts.name, "".join(parts.arguments))
                 for index, parts in sorted(self.calls.items())]
        reasoning = "".join(self.reasoning)
        replay: dict[str, Any] = {}
        blocks = self.thinking.build()
        if blocks:
            replay["thinking_blocks"] = blocks
        if reasoning:
            replay["reasoning_content"] = reasoning
        if self.fields:
            replay["provider_specific_fields"] = dict(self.fields)
        call_fields = {call.id: parts.fields for call, (_, parts) in zip(calls, sorted(self.calls.items()),
                                                                          strict=True) if parts.fields}
        if call_fields:
            replay["tool_call_fields"] = call_fields
        return Completion("".join(self.text), calls, self.usage, None, self.finish_reason, reasoning, replay)


def _namespace(value: Any) -> Any:
    """A JSON object as attributes (usage_of reads litellm's objects)."""
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    return value


def usage_of(usage: Any) -> Usage:
    """anvil's record of litellm's usage: cache reads (``prompt_tokens_details.cached_tokens``, which litellm
    fills for Anthropic too), cache writes (``cache_creation_input_tokens``, or the OpenAI-style detail) and
    reasoning tokens."""
    details = getattr(usage, "prompt_tokens_details", None)
    read = getattr(details, "cached_tokens", 0) if details is not None else 0
    written = getattr(usage, "cache_creation_input_tokens", None)
    if not written and details is not None:
        written = getattr(details, "cache_creation_tokens", 0) or getattr(details, "cache_write_tokens", 0)
    if not read:
        read = getattr(usage, "cache_read_input_tokens", 0)
    output = getattr(usage, "completion_tokens_details", None)
    reasoning = getattr(output, "reasoning_tokens", 0) if output is not None else 0
    return Usage(int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), int(read or 0),
                 int(written or 0), int(reasoning or 0))

"""Prompt caching breakpoints for providers with explicit cache control (Anthropic, also through Bedrock and
Vertex), placed so that every step reads the previous step's whole prompt from cache.

The provider caches the prompt prefix up to each block marked ``cache_control`` (tools, then system, then
messages, in that order) and allows four such breakpoints. anvil marks:

1. the last tool: the tool list, the most stable part;
2. the system prompt: tools and system;
3. the message the previous request ended with (the one before the latest assistant reply): the prefix the
   previous step wrote, read back now even when one step added more blocks than the provider looks back over
   (20) from a breakpoint;
4. the last message: this request's whole prompt, written for the next step to read.

The marks move with the conversation but change no content, so the prefix stays byte-stable; after a
compaction the new, shorter history is written again from the system prompt on. Providers with automatic
prefix caching (OpenAI, Gemini, DeepSeek) get no marks: only the stable prefix, which the history, the
system prompt (built once per session) and the tool list (built once, changed only when an MCP server's tools
arrive) keep.
"""

from __future__ import annotations

from typing import Any

EPHEMERAL = {"type": "ephemeral"}


def with_breakpoints(messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``messages`` and ``tools`` with the breakpoints above (copies; the history is not changed)."""
    marked_tools = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}] if tools else tools
    out = list(messages)
    if out and out[0].get("role") == "system":
        out[0] = _marked(out[0])
    for index in _message_breakpoints(out):
        out[index] = _marked(out[index])
    return out, marked_tools


def _message_breakpoints(messages: list[dict[str, Any]]) -> list[int]:
    """The last message, and the message the previous request ended with: the one before the latest reply."""
    first = 1 if messages and messages[0].get("role") == "system" else 0
    if len(messages) <= first:
        return []
    last = len(messages) - 1
    latest_reply = next((i for i in range(last, first - 1, -1) if messages[i].get("role") == "assistant"), None)
    previous_end = latest_reply - 1 if latest_reply is not None and latest_reply - 1 >= first else None
    return sorted({last, *([previous_end] if previous_end is not None else [])})


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with a breakpoint on its last block, where litellm carries it into the provider's request."""
    content = message.get("content")
    if isinstance(content, list) and content:
        return {**message, "content": [*content[:-1], {**content[-1], "cache_control": EPHEMERAL}]}
    calls = message.get("tool_calls")
    if message.get("role") == "assistant" and calls:  # the tool_use blocks come after the text
        return {**message, "tool_calls": [*calls[:-1], {**calls[-1], "cache_control": EPHEMERAL}]}
    if message.get("role") == "system" and isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content, "cache_control": EPHEMERAL}]}
    return {**message, "cache_control": EPHEMERAL}

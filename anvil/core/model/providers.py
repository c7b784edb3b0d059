"""What anvil does differently per provider family, on top of litellm: prompt caching, reasoning parameters,
and what goes back to the provider with each assistant message.

- **Anthropic** (``anthropic/``, and Claude through Bedrock or Vertex): explicit cache breakpoints
  (``caching.py``); extended thinking, whose signed ``thinking_blocks`` must come back with their message. The
  API holds the assistant message of the current tool-use loop to the request's setting: with thinking on it
  must start with its thinking block, with thinking off it may hold none. So a request inside a loop that began
  without thinking (a session resumed from another model, thinking turned on mid-loop) goes without thinking
  until the loop ends, and a request without thinking sends no thinking blocks (earlier turns' blocks may
  always be left out).
- **DeepSeek**: in thinking mode the reasoning (``reasoning_content``) of a tool-calling message must come back.
- **Gemini**: thought signatures travel in litellm's ``provider_specific_fields`` (of the message and of each tool
  call) and in the tool call ids.
- Every other provider gets the plain chat message: none of those fields, which an OpenAI-compatible server
  may reject. A session that switches models keeps them in its history for when they matter again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anvil.core.model.protocol import Reasoning

#: litellm providers that serve Claude models besides Anthropic's own API
_CLAUDE_HOSTS = frozenset({"bedrock", "bedrock_converse", "vertex_ai", "vertex_ai_beta"})
_GEMINI = frozenset({"gemini", "vertex_ai", "vertex_ai_beta"})
#: the keys of an assistant message that carry provider state, as litellm names them
REPLAY_KEYS = ("thinking_blocks", "reasoning_content", "provider_specific_fields")


@dataclass(frozen=True)
class Traits:
    provider: str
    #: Anthropic-style cache_control breakpoints (four at most)
    explicit_cache: bool = False
    #: replies carry signed thinking blocks that must come back with their message
    signed_thinking: bool = False
    #: the reasoning text of a reply must come back with it (DeepSeek's thinking mode)
    reasoning_back: bool = False
    #: litellm's provider_specific_fields must come back (Gemini's thought signatures)
    provider_fields_back: bool = False
    #: takes a thinking budget in tokens (``thinking={"type": "enabled", "budget_tokens": N}``)
    thinking_budget: bool = False


def traits_for(model: str, provider: str) -> Traits:
    """The traits of ``model`` as served by litellm's ``provider``."""
    name = model.lower()
    claude = provider == "anthropic" or (provider in _CLAUDE_HOSTS and ("claude" in name or "anthropic" in name))
    gemini = provider in _GEMINI and "gemini" in name
    return Traits(provider, explicit_cache=claude, signed_thinking=claude, reasoning_back=provider == "deepseek",
                  provider_fields_back=claude or gemini, thinking_budget=claude or gemini)


def reasoning_params(reasoning: Reasoning, traits: Traits) -> dict[str, Any]:
    """litellm's parameters for ``reasoning``: a thinking budget where the provider takes one and it is set,
    else ``reasoning_effort``, which litellm maps per provider (a default budget for Anthropic and Gemini)."""
    if not reasoning.on:
        return {}
    if reasoning.budget and traits.thinking_budget:
        return {"thinking": {"type": "enabled", "budget_tokens": reasoning.budget}}
    return {"reasoning_effort": reasoning.level}


def outgoing(messages: list[dict[str, Any]], traits: Traits, *, thinking: bool) -> list[dict[str, Any]]:
    """The history as this provider takes it: assistant messages keep only the provider state it needs back
    (thinking blocks only in a request with ``thinking`` on)."""
    keep = {key for key, wanted in (("thinking_blocks", traits.signed_thinking and thinking),
                                    ("reasoning_content", traits.reasoning_back),
                                    ("provider_specific_fields", traits.provider_fields_back)) if wanted}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") != "assistant":
            out.append(message)
            continue
        trimmed = {k: v for k, v in message.items() if k not in REPLAY_KEYS or k in keep}
        if not traits.provider_fields_back and message.get("tool_calls"):
            trimmed["tool_calls"] = [{k: v for k, v in call.items() if k != "provider_specific_fields"}
                                     for call in message["tool_calls"]]
        out.append(trimmed)
    return out


def thinking_possible(messages: list[dict[str, Any]]) -> bool:
    """Whether a request may turn thinking on for a signed-thinking provider: outside a tool-use loop always;
    inside one only when the assistant message that called the tools kept a thinking block (signed, or
    redacted)."""
    in_loop = False
    for message in reversed(messages):
        role = message.get("role")
        if role == "tool":
            in_loop = True
        elif role == "assistant":
            return not in_loop or _has_signed_thinking(message)
    return True


def _has_signed_thinking(message: dict[str, Any]) -> bool:
    blocks = message.get("thinking_blocks") or []
    return any(isinstance(b, dict) and (b.get("type") == "redacted_thinking" or b.get("signature")) for b in blocks)

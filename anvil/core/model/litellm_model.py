"""The model protocol on litellm: any litellm model string, always streaming, retried within bounds.

litellm takes seconds to import, so it is imported lazily (:func:`load_litellm`) and can be warmed
piece by piece (:data:`LITELLM_DEPENDENCIES` with :func:`preload`, then :func:`load_litellm`,
:func:`warm_client` and :func:`warm_tool_calls`) by a front end that pauses between the pieces.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import threading
from collections.abc import AsyncIterator
from typing import Any

from anvil.core.events import Retrying
from anvil.core.model.chunks import StreamAssembler
from anvil.core.model.errors import RetryPolicy, classify_error
from anvil.core.model.protocol import StreamItem, Usage

# ---------------------------------------------------------------------------------------------
# litellm, loaded lazily

_litellm: Any = None
_litellm_lock = threading.Lock()


def load_litellm() -> Any:
    """Import litellm once, configured for offline, quiet use."""
    global _litellm
    if _litellm is None:
        with _litellm_lock:
            if _litellm is None:
                # Without this litellm fetches a price map over the network at import, retrying with sleeps.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                # In its default DEV mode litellm loads a .env file found above its own install, which for
                # a venv inside the person's repository is the project's .env: their app's secrets would
                # become anvil's environment (and its commands'). anvil reads keys from the real environment.
                os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
                import litellm

                litellm.suppress_debug_info = True  # it prints provider-list noise otherwise
                litellm.drop_params = True  # providers that lack stream_options etc. still work
                _litellm = litellm
    return _litellm


# litellm's heaviest dependencies (about 0.4 s, 0.1 s and 0.07 s of its ~1.8 s import), in the order it
# imports them. Importing them one at a time first cuts the import into pieces a front end can pause
# between; litellm's own package body stays one piece.
LITELLM_DEPENDENCIES = ("openai", "aiohttp", "jinja2")

# What litellm imports inside its first completion call whenever tools are passed (anvil always passes
# them): its MCP tool handling, ~250 modules, ~0.5 s in the request's worker thread while the first answer
# waits. These are litellm internals (1.106): should they move, preloading them does nothing and the first
# call pays again, as it did before.
_TOOL_CALL_MODULES = ("litellm.responses.mcp.chat_completions_handler",
                      "litellm.responses.mcp.litellm_proxy_mcp_handler")


def preload(*modules: str) -> None:
    """Import ``modules`` now. A failure is left for the real import to raise, where it is reported."""
    for module in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def warm_client(model: str) -> None:
    """Import what litellm's first request for ``model`` would import on the caller's event loop.

    For OpenAI and OpenAI-compatible providers litellm goes through the OpenAI SDK, whose client imports
    all its resource modules (~0.3 s) the first time a request touches ``client.chat``: inside the first
    model call, on the front end's event loop. Other providers do not use the SDK, so nothing is imported.
    """
    litellm = load_litellm()
    try:
        provider = litellm.get_llm_provider(model)[1]
    except Exception:
        return  # an unknown provider: preflight has said so, and the call will too
    if provider in ("openai", "azure") or provider in getattr(litellm, "openai_compatible_providers", ()):
        preload("openai.resources")


def warm_tool_calls() -> None:
    """Import what litellm's first request with tools imports (see ``_TOOL_CALL_MODULES``), ahead of it."""
    load_litellm()  # first: litellm must be configured (offline price map) by its first import
    preload(*_TOOL_CALL_MODULES)


_OPENAI_COMPATIBLE = ("openai/", "hosted_vllm/", "lm_studio/", "ollama/", "ollama_chat/", "llamafile/")


class LiteLLMModel:
    """Any litellm model string, always streaming, with usage and cost from the responses."""

    def __init__(self, name: str, *, api_base: str | None = None, api_key: str | None = None,
                 retry: RetryPolicy | None = None, timeout: float = 600.0,
                 context_window_override: int | None = None) -> None:
        self.name = name
        self.api_base = api_base
        self.api_key = api_key or os.environ.get("ANVIL_API_KEY") or self._placeholder_key()
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._context_window = context_window_override

    def _placeholder_key(self) -> str | None:
        # Local servers (llama.cpp, vLLM, Ollama) need no key, but the OpenAI client insists on one.
        if self.api_base and self.name.startswith(_OPENAI_COMPATIBLE) and not os.environ.get("OPENAI_API_KEY"):
            return "anvil-no-key"
        return None

    def preflight(self) -> str | None:
        """A problem that would make every call fail (unknown provider, missing key), said up front."""
        litellm = load_litellm()
        try:
            litellm.get_llm_provider(self.name)
        except Exception as exc:
            return classify_error(exc, self.name, self.api_base).message
        if self.api_key:
            return None
        missing = [k for k in litellm.validate_environment(model=self.name).get("missing_keys", [])
                   if not k.endswith("_API_BASE")]  # a base URL has a default; a key does not
        if missing:
            names = " or ".join(missing)
            return (f"No API key for {self.name}: set {names} (or ANVIL_API_KEY), or use --api-base for a "
                    "local server. To try anvil without a key: anvil -p \"...\" --model scripted")
        return None

    def context_window(self) -> int | None:
        if self._context_window is None:
            try:
                info = load_litellm().get_model_info(self.name)
                self._context_window = int(info.get("max_input_tokens") or info.get("max_tokens") or 0) or None
            except Exception:
                self._context_window = None
        return self._context_window

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": _with_cache_hints(self.name, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            "timeout": self.timeout,
            "num_retries": 0,  # retries are ours: bounded, visible as events
            "max_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        return kwargs

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        litellm = await asyncio.to_thread(load_litellm)
        attempt = 1
        while True:
            started_output = False
            try:
                response = await litellm.acompletion(**self._request(messages, tools))
                assembler = StreamAssembler()
                async for chunk in response:
                    delta_text = assembler.add(chunk)
                    if delta_text:
                        started_output = True
                        yield delta_text
                completion = assembler.build()
                completion.cost = self._cost(litellm, completion.usage)
                yield completion
                return
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify_error(exc, self.name, self.api_base)
                # Text already shown cannot be taken back, so a mid-stream failure is not retried.
                if not error.retryable or started_output or attempt >= self.retry.max_attempts:
                    if error.retryable and attempt > 1:
                        error.message += f" (gave up after {attempt} attempts)"
                    raise error from exc
                delay = self.retry.delay(attempt)
                yield Retrying(attempt, self.retry.max_attempts, round(delay, 2), error.message)
                await asyncio.sleep(delay)
                attempt += 1

    def _cost(self, litellm: Any, usage: Usage | None) -> float | None:
        if usage is None:
            return None
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=self.name, prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
            return float(prompt_cost + completion_cost)
        except Exception:
            return None  # unknown price (local models): no cost rather than a guess


def _with_cache_hints(model: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark the system prompt cacheable for providers with explicit prompt caching (Anthropic)."""
    if not (model.startswith(("anthropic/", "claude", "bedrock/anthropic")) and messages):
        return messages
    first = messages[0]
    if first.get("role") != "system" or not isinstance(first.get("content"), str):
        return messages
    cached = {"role": "system", "content": [{"type": "text", "text": first["content"],
                                             "cache_control": {"type": "ephemeral"}}]}
    return [cached, *messages[1:]]

"""OpenAI-shaped streams read as plain dicts: the same chunks with a fraction of the work per chunk.

For OpenAI and the local servers that speak its protocol, litellm's stream is the OpenAI SDK's
``AsyncStream`` wrapped in litellm's ``CustomStreamWrapper``. Per chunk the SDK parses the SSE event and
builds typed objects (``ChatCompletionChunk``: ~0.2 ms), and the wrapper rebuilds them as litellm's own with
its logging, hidden parameters and usage bookkeeping (~0.8 ms more): at 2,000 chunks a second that is more than
a core, and a tool call's arguments in 10-character pieces assemble at ~10 KB/s (benchmarks/bench_chunks.py).
Everything the assembler needs is in the event's JSON already.

So for those providers the SDK's own SSE events are read (its HTTP client, decoder, timeout and
connection-error mapping, and its in-stream error check, as in ``AsyncStream.__stream__``) and each event's
JSON goes to :meth:`~anvil.core.model.chunks.StreamAssembler.add_dict`. litellm still builds and sends the
request, authenticates, routes and maps errors; only its per-chunk rebuilding is skipped. Any other provider,
or a litellm or SDK whose stream does not look like this, keeps litellm's wrapper (:func:`lean_events` returns
None). One difference: usage is what the provider reports; litellm's wrapper estimates reasoning tokens with a
tokenizer when a provider leaves them out (they are part of ``completion_tokens`` either way, so no cost changes).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

#: litellm providers whose chunks litellm's wrapper takes from the OpenAI SDK as they are (its generic
#: OpenAI branch, no provider-specific rewriting)
LEAN_PROVIDERS = frozenset({"openai", "azure", "custom_openai", "hosted_vllm", "lm_studio", "llamafile"})


def lean_events(response: Any) -> AsyncGenerator[dict[str, Any], None] | None:
    """The chunks of litellm's streaming ``response`` as dicts, when it can be read lean; else None."""
    stream = getattr(response, "completion_stream", None)
    if getattr(response, "custom_llm_provider", None) not in LEAN_PROVIDERS:
        return None
    kind = type(stream)
    if kind.__name__ != "AsyncStream" or not kind.__module__.startswith("openai"):
        return None
    if not callable(getattr(stream, "_iter_events", None)) or getattr(stream, "response", None) is None:
        return None
    return _chunks(stream)


async def _chunks(stream: Any) -> AsyncGenerator[dict[str, Any], None]:
    import httpx
    from openai import APIConnectionError, APIError, APITimeoutError

    response = stream.response
    try:
        async for sse in _transport_errors_mapped(stream._iter_events(), response.request,
                                                  httpx, APIConnectionError, APITimeoutError):
            data = sse.data
            if data.startswith("[DONE]"):
                break
            if not data.strip():
                continue
            chunk = json.loads(data)
            if isinstance(chunk, dict) and chunk.get("error"):
                error = chunk["error"]
                message = error.get("message") if isinstance(error, dict) else None
                raise APIError(message=message if isinstance(message, str) and message else
                               "An error occurred during streaming", request=response.request, body=error)
            if isinstance(chunk, dict):
                yield chunk
    finally:
        await response.aclose()


async def _transport_errors_mapped(events: AsyncIterator[Any], request: Any, httpx: Any, connection_error: Any,
                                   timeout_error: Any) -> AsyncIterator[Any]:
    """``events``, with a read that times out or drops mid-stream raised as the SDK raises it for the request
    (litellm's wrapper maps them so; anvil's error classes then say "timed out" / "could not connect")."""
    try:
        async for event in events:
            yield event
    except httpx.TimeoutException as exc:
        raise timeout_error(request=request) from exc
    except httpx.TransportError as exc:
        raise connection_error(message=f"The stream broke off: {exc}", request=request) from exc

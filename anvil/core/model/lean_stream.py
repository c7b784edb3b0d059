"""OpenAI-shaped streams read as plain dicts: the same chunks with a fraction of the work per chunk.

For OpenAI and the local servers that speak its protocol, litellm's stream is the OpenAI SDK's
``AsyncStream`` wrapped in litellm's ``CustomStreamWrapper``. Per chunk the SDK parses the SSE event and
builds typed objects (``ChatCompletionChunk``: ~0.2 ms), and the wrapper rebuilds them as litellm's own with
its logging, hidden parameters and usage bookkeeping (~0.8 ms more): at 2,000 chunks a second that is more than
a core, and a tool call's arguments in 10-character pieces assemble at ~10 KB/s (benchmarks/bench_chunks.py).
Everything the assembler needs is in the event's JSON already.

So for those providers the HTTP response the SDK opened is read directly: its bytes
(:class:`~anvil.core.model.sse.EventData` splits the events), each event's JSON parsed with jiter (the SDK's own
JSON parser, ~2x ``json.loads``; what it refuses goes to ``json.loads``, so what is accepted and the errors raised
are the standard library's), and the chunks of each read go to
:meth:`~anvil.core.model.chunks.StreamAssembler.add_dict` as one batch. The SDK's stream semantics are kept:
``[DONE]`` ends it, an event whose JSON has an ``error`` raises the SDK's ``APIError`` with its message (after
the chunks before it), a read that times out or breaks raises the SDK's timeout or connection error. litellm still
builds and sends the request, authenticates, routes and maps errors; only its and the SDK's per-chunk work is
skipped. Any other provider, or a litellm or SDK whose stream does not look like this, keeps litellm's wrapper
(:func:`lean_events` returns None). One difference: usage is what the provider reports; litellm's wrapper
estimates reasoning tokens with a tokenizer when a provider leaves them out (they are part of
``completion_tokens`` either way, so no cost changes).
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from anvil.core.model.sse import EventData

#: litellm providers whose chunks litellm's wrapper takes from the OpenAI SDK as they are (its generic
#: OpenAI branch, no provider-specific rewriting)
LEAN_PROVIDERS = frozenset({"openai", "azure", "custom_openai", "hosted_vllm", "lm_studio", "llamafile"})


def lean_events(response: Any) -> AsyncGenerator[list[dict[str, Any]], None] | None:
    """The chunks of litellm's streaming ``response`` as dicts, a list per read, when it can be read lean; else
    None."""
    stream = getattr(response, "completion_stream", None)
    if getattr(response, "custom_llm_provider", None) not in LEAN_PROVIDERS:
        return None
    kind = type(stream)
    if kind.__name__ != "AsyncStream" or not kind.__module__.startswith("openai"):
        return None
    http = getattr(stream, "response", None)
    if not callable(getattr(http, "aiter_bytes", None)) or getattr(http, "request", None) is None:
        return None
    return _batches(http)


async def _batches(response: Any) -> AsyncGenerator[list[dict[str, Any]], None]:
    from openai import APIConnectionError, APITimeoutError

    events = EventData()
    timeouts, failures = _transport_exceptions()
    pieces = response.aiter_bytes()
    try:
        while True:
            try:
                piece = await pieces.__anext__()
            except StopAsyncIteration:
                return
            except timeouts as exc:
                raise APITimeoutError(request=response.request) from exc
            except failures as exc:
                raise APIConnectionError(message=f"The stream broke off: {exc}", request=response.request) from exc
            chunks, failure, done = _chunks_of(events.feed(piece), response.request)
            if chunks:
                yield chunks
            if failure is not None:
                raise failure
            if done:
                return
    finally:
        await pieces.aclose()
        await response.aclose()


def _chunks_of(payloads: list[bytes], request: Any) -> tuple[list[dict[str, Any]], Exception | None, bool]:
    """The chunks in events' data; the error to raise after them (an error event, JSON that does not parse), or
    None; and whether the stream said ``[DONE]``."""
    from jiter import from_json

    chunks: list[dict[str, Any]] = []
    for data in payloads:
        if not data.startswith(b"{"):  # rare: the end, an empty event, something odd
            if data.startswith(b"[DONE]"):
                return chunks, None, True
            if not data.decode("utf-8", "replace").strip():
                continue
        try:
            chunk = from_json(data)
        except ValueError:
            try:  # as the SDK parses it (jiter refuses lone surrogates, which json accepts)
                chunk = json.loads(data.decode("utf-8"))
            except ValueError as exc:
                return chunks, exc, False
        if type(chunk) is not dict:
            continue
        if chunk.get("error"):
            return chunks, _stream_error(chunk["error"], request), False
        chunks.append(chunk)
    return chunks, None, False


def _stream_error(error: Any, request: Any) -> Exception:
    """An error event as the SDK raises it (``AsyncStream.__stream__``)."""
    from openai import APIError

    message = error.get("message") if isinstance(error, dict) else None
    return APIError(message=message if isinstance(message, str) and message else "An error occurred during streaming",
                    request=request, body=error)


def _transport_exceptions() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, other failures) of a read, as the SDK tells them apart: its own lists where it has them (newer
    SDKs read with httpx2, and add TLS failures it leaves unmapped), else httpx's."""
    try:
        from openai._httpx2 import request_exceptions, timeout_exceptions
    except ImportError:
        import httpx

        return (httpx.TimeoutException,), (httpx.RequestError,)
    return tuple(timeout_exceptions()), tuple(request_exceptions())

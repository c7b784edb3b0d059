"""What the engine loads before its first run: imports, litellm's first-request set-up, tokenizers.

Everything here must leave no thread behind (a fork copies only the forking thread; a lock another thread
held stays locked in the child forever) and no state about any run: it runs before any run exists, with the
engine's own key-free environment. litellm's first request imports ~60 more modules and sets up its
client machinery (~0.7 s); it is made once here, with tools, against a canned stream from a local socket served
on the same event loop, in OpenAI's and Anthropic's shapes, and litellm's client cache is emptied after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

#: the modules every front end may need, imported ahead (front ends import them lazily, after a first paint)
FRONT_END_MODULES = ("anvil.cli", "anvil.config", "anvil.runtime", "anvil.facade", "anvil.headless",
                     "anvil.tui.app", "anvil.tui.themes", "anvil.plain.repl", "anvil.frontend.commands")
#: models whose tokenizers are loaded ahead (litellm's own bundled encodings; a miss only costs the first count)
TOKENIZER_MODELS = ("gpt-4o", "gpt-4", "anthropic/claude-sonnet-4-5")
_TOOLS = [{"type": "function", "function": {"name": "warm", "description": "warm up",
                                              "parameters": {"type": "object", "properties": {}}}}]


def warm_up() -> None:
    from anvil.core.mcp.transport import import_mcp
    from anvil.core.model import litellm_model

    litellm_model.preload(*litellm_model.LITELLM_DEPENDENCIES)
    litellm = litellm_model.load_litellm()
    litellm_model.warm_client("openai/warm")
    litellm_model.warm_tool_calls()
    litellm_model.preload(*FRONT_END_MODULES)
    with contextlib.suppress(Exception):
        import_mcp()
    _tool_schemas()
    with contextlib.suppress(Exception):
        asyncio.run(_first_requests(litellm))
    with contextlib.suppress(Exception):
        litellm.in_memory_llm_clients_cache.flush_cache()  # clients of the warm-up's made-up key and URL
    for model in TOKENIZER_MODELS:
        with contextlib.suppress(Exception):
            litellm.token_counter(model=model, text="warm")


def _tool_schemas() -> None:
    """pydantic's JSON-schema machinery, as the first run's tool list uses it."""
    with contextlib.suppress(Exception):
        from anvil.core.tools import default_tools

        default_tools().schemas()


async def _first_requests(litellm: Any) -> None:
    server = await asyncio.start_server(_canned, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        for model, base in (("openai/anvil-warm-up", f"http://127.0.0.1:{port}/v1"),
                            ("anthropic/claude-sonnet-4-5", f"http://127.0.0.1:{port}")):
            with contextlib.suppress(Exception):
                response = await litellm.acompletion(
                    model=model, api_base=base, api_key="anvil-warm-up", stream=True, tools=_TOOLS, max_tokens=16,
                    messages=[{"role": "system", "content": "warm"}, {"role": "user", "content": "warm"}],
                    stream_options={"include_usage": True}, num_retries=0, max_retries=0, timeout=10)
                async for _chunk in response:
                    pass
        await asyncio.sleep(0.05)  # litellm's after-stream logging tasks
    finally:
        server.close()
        await server.wait_closed()


async def _canned(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """One HTTP request, answered with a short stream in the shape its path asks for."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        await reader.readexactly(length)
        events = _anthropic_events() if b"/messages" in head.split(b"\r\n")[0] else _openai_events()
        body = b"".join(events)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        await writer.drain()
    finally:
        writer.close()


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    return (f"event: {event}\n" if event else "").encode() + b"data: " + json.dumps(data).encode() + b"\n\n"


def _openai_events() -> list[bytes]:
    base = {"id": "warm", "object": "chat.completion.chunk", "created": 0, "model": "anvil-warm-up"}
    return [_sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]}),
            _sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            _sse({**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}),
            b"data: [DONE]\n\n"]


def _anthropic_events() -> list[bytes]:
    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {"id": "msg_warm", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [], "stop_reason": None, "usage": usage}
    return [_sse({"type": "message_start", "message": message}, "message_start"),
            _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                 "content_block_start"),
            _sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
                 "content_block_delta"),
            _sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            _sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}, "message_delta"),
            _sse({"type": "message_stop"}, "message_stop")]

"""A local Anthropic Messages API server that streams scripted turns, with the API's own checks and caching.

Tests reach it through litellm with ``model="anthropic/<name>"`` and ``api_base=server.url`` (litellm appends
``/v1/messages``), so the adapter runs litellm's real Anthropic code: its request transformation, its SSE
parser, its usage and cost. Requests are checked and prompt caching is accounted as the API does (see
``anthropic_rules.py``); a rejected request gets the API's 400 ``invalid_request_error`` body.

Each scripted turn is a dict:

    {"thinking": "Let me look.", "text": "Reading it.", "tool_calls": [{"name": "read_file", "arguments": {...}}]}
    {"redacted_thinking": "opaque-data", "text": "..."}     # a redacted_thinking block instead
    {"status": 529, "error_type": "overloaded_error", "error": "Overloaded"}   # an HTTP error instead of a stream
    {"stream_error": "overloaded_error", "text": "Partial"}   # an error event in the stream after some text
    {"text": "Partial answer", "drop_after": 5}   # the connection drops after 5 events (tests/support/sse.py)

Thinking is streamed only when the request turned it on, as the API does. A reply longer than the request's
``max_tokens`` (a quarter of its characters, as everywhere here) is cut there: mid-block, mid-JSON, with
``stop_reason: "max_tokens"``. The stream follows the documented event sequence: ``message_start`` (usage with
the cache fields), ``ping``, for each block ``content_block_start``, its deltas (``thinking_delta`` then
``signature_delta``, ``text_delta``, ``input_json_delta``) and ``content_block_stop``, then ``message_delta``
(stop reason and cumulative usage) and ``message_stop``.

It also runs as a script for trying anvil by hand and for terminal tests (``python -m
tests.support.anthropic_server script.json`` from the repository root), printing its URL on the first line.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.anthropic_rules import CacheReport, InvalidRequest, PromptCache, sign, thinking_enabled, validate
from tests.support.sse import DROP_KEY, stream_sse


@dataclass
class Served:
    """One request and what the server answered: its usage, or the error it returned."""

    request: dict[str, Any]
    usage: dict[str, int] | None = None
    error: str | None = None
    drop_after: int | None = None  # the stream was cut after this many events


class ScriptedAnthropicServer:
    def __init__(self, turns: list[dict[str, Any]] | None = None, *, min_cacheable: int = 1024,
                 chunk_chars: int = 12) -> None:
        self.turns: deque[dict[str, Any]] = deque(turns or [])
        self.served: list[Served] = []
        self.headers: list[dict[str, str]] = []
        self.cache = PromptCache(min_cacheable)
        self.chunk_chars = chunk_chars
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [s.request for s in self.served]

    @property
    def errors(self) -> list[str]:
        return [s.error for s in self.served if s.error]

    def add(self, *turns: dict[str, Any]) -> None:
        with self._lock:
            self.turns.extend(turns)

    def start(self) -> ScriptedAnthropicServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedAnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_turn(self) -> dict[str, Any]:
        with self._lock:
            if self.turns:
                return self.turns.popleft()
        return {"text": "(the scripted server has no more turns)"}

    def answer(self, request: dict[str, Any]) -> tuple[int, dict[str, Any] | None, Iterator[tuple[str, Any]] | None,
                                                       Served]:
        """(status, error body, events, the record) for one request body; records what was served."""
        served = Served(request)
        with self._lock:
            self.served.append(served)
        try:
            validate(request)
        except InvalidRequest as exc:
            served.error = str(exc)
            return 400, _error("invalid_request_error", str(exc)), None, served
        turn = self._next_turn()
        if "status" in turn:
            served.error = str(turn.get("error", "fault"))
            return int(turn["status"]), _error(turn.get("error_type", "api_error"), served.error), None, served
        with self._lock:
            cache = self.cache.account(request)
        served.drop_after = turn.get(DROP_KEY)
        return 200, None, _events(turn, request, cache, served, self.chunk_chars), served

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.rstrip("/").endswith("/v1/messages"):
                    self._send_json(404, _error("not_found_error", f"Not found: {self.path}"))
                    return
                status, error, events, served = server.answer(request)
                if events is None:
                    self._send_json(status, error or {})
                    return
                stream_sse(self, (f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events),
                           drop_after=served.drop_after)

            def _send_json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Budget:
    """Output characters left under the request's max_tokens (4 characters a token)."""

    def __init__(self, max_tokens: int) -> None:
        self.left = max_tokens * 4
        self.used = 0
        self.cut = False

    def take(self, text: str) -> str:
        piece = text[: max(0, self.left)]
        self.left -= len(piece)
        self.used += len(piece)
        self.cut = self.cut or len(piece) < len(text)
        return piece


def _blocks(turn: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """The reply's content blocks, in the order the API sends them."""
    blocks: list[dict[str, Any]] = []
    if thinking_enabled(request):
        if "redacted_thinking" in turn:
            blocks.append({"type": "redacted_thinking", "data": str(turn["redacted_thinking"])})
        elif turn.get("thinking"):
            blocks.append({"type": "thinking", "thinking": str(turn["thinking"])})
    if turn.get("text"):
        blocks.append({"type": "text", "text": str(turn["text"])})
    for call in turn.get("tool_calls", []):
        args = call.get("arguments", {})
        raw = args if isinstance(args, str) else json.dumps(args)
        blocks.append({"type": "tool_use", "id": call.get("id") or f"toolu_{secrets.token_hex(8)}",
                       "name": call["name"], "raw": raw})
    return blocks


def _events(turn: dict[str, Any], request: dict[str, Any], cache: CacheReport, served: Served,
            chunk: int) -> Iterator[tuple[str, Any]]:
    usage = {"input_tokens": cache.input_tokens, "cache_creation_input_tokens": cache.cache_creation_input_tokens,
             "cache_read_input_tokens": cache.cache_read_input_tokens}
    message = {"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "content": [],
               "model": request["model"], "stop_reason": None, "stop_sequence": None,
               "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": message}
    yield "ping", {"type": "ping"}
    budget = _Budget(int(request["max_tokens"]))
    blocks = _blocks(turn, request)
    for index, block in enumerate(blocks):
        if budget.cut:
            break
        yield from _block_events(index, block, budget, chunk)
        if "stream_error" in turn and block["type"] == "text":
            served.error = str(turn["stream_error"])
            yield "error", _error(served.error, "Overloaded")
            return
    stop = "max_tokens" if budget.cut else "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    output = max(1, (budget.used + 3) // 4)
    served.usage = {**usage, "output_tokens": output}
    yield "message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": served.usage}
    yield "message_stop", {"type": "message_stop"}


def _block_events(index: int, block: dict[str, Any], budget: _Budget, chunk: int) -> Iterator[tuple[str, Any]]:
    kind = block["type"]
    start: dict[str, Any] = {"thinking": {"type": "thinking", "thinking": "", "signature": ""},
                             "text": {"type": "text", "text": ""}}.get(kind, {})
    if kind == "redacted_thinking":
        start = dict(block)
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    field, delta_type = {"thinking": ("thinking", "thinking_delta"), "text": ("text", "text_delta"),
                         "tool_use": ("raw", "input_json_delta")}.get(kind, ("", ""))
    text = str(block.get(field, ""))
    key = "partial_json" if kind == "tool_use" else field
    for begin in range(0, len(text), chunk):
        piece = budget.take(text[begin:begin + chunk])
        if piece:
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": delta_type, key: piece}}
        if budget.cut:
            break
    if kind == "thinking" and not budget.cut:
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": {"type": "signature_delta", "signature": sign(text)}}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}
    time.sleep(0)  # let other threads (the client reading) run between blocks


def main() -> None:
    turns = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else []
    server = ScriptedAnthropicServer(turns)
    print(server.url, flush=True)
    server._httpd.serve_forever()


if __name__ == "__main__":
    main()

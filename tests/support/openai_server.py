"""A local OpenAI-compatible chat-completions server that streams scripted turns.

Tests point litellm at it (``model="openai/<name>"``, ``api_base=server.url``) so that the
adapter runs through litellm's real HTTP and streaming code, with no provider involved.

Each scripted turn is a dict:

    {"text": "hello", "tool_calls": [{"name": "read_file", "arguments": {"path": "a"}}]}
    {"status": 429, "error": "slow down"}          # a fault answered instead of a stream
    {"tool_calls": [{"name": "x", "arguments": "{not json"}]}   # raw string arguments are sent as-is
    {"text": "...", "usage": {"prompt_tokens": 10, "completion_tokens": 3}}
    {"reasoning": "First, ...", "text": "..."}     # reasoning streamed as delta.reasoning_content, before the text
    {"text": "...", "usage": {"prompt_tokens": 900, "completion_tokens": 30, "cached_tokens": 800,
                              "reasoning_tokens": 12}}   # reported in prompt/completion_tokens_details
    {"text": "...", "drop_after": 3}   # the connection drops after 3 streamed chunks (tests/support/sse.py)

A reply longer than the request's ``max_tokens`` (or ``max_completion_tokens``; 4 characters a token) is cut
there, reasoning, text and tool-call arguments alike, and ends with ``finish_reason: "length"``.

``POST /v1/responses`` answers the same turns as OpenAI's Responses API stream (``responses_api.py``): what
litellm's bridge reaches for models that speak only that API (OpenAI's codex models).

The server also runs as a script (``python tests/support/openai_server.py script.json``)
for terminal tests and benchmarks, printing its URL on the first line.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

try:
    from tests.support.responses_api import responses_events
    from tests.support.sse import DROP_KEY, stream_sse
except ImportError:  # run as a script (terminal tests, benchmarks): this directory is on the path instead
    from responses_api import responses_events  # type: ignore[no-redef]
    from sse import DROP_KEY, stream_sse  # type: ignore[no-redef]


class ScriptedOpenAIServer:
    """Serves scripted turns in order; records every request body it receives."""

    def __init__(self, turns: list[dict[str, Any]] | None = None, chunk_delay: float = 0.0) -> None:
        self.turns: deque[dict[str, Any]] = deque(turns or [])
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.chunk_delay = chunk_delay
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def add(self, *turns: dict[str, Any]) -> None:
        with self._lock:
            self.turns.extend(turns)

    def start(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_turn(self) -> dict[str, Any]:
        with self._lock:
            if self.turns:
                return self.turns.popleft()
        return {"text": "(the scripted server has no more turns)"}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:  # /v1/models, for clients that probe
                body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                self._send_json(200, body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(request)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                turn = server._next_turn()
                if "status" in turn:
                    error = {"error": {"message": turn.get("error", "fault"), "type": "server_error"}}
                    self._send_json(int(turn["status"]), json.dumps(error))
                    return
                if not request.get("stream"):
                    self._send_json(200, json.dumps(_whole_response(turn, request)))
                    return
                drop = turn.get(DROP_KEY)
                if self.path.rstrip("/").endswith("/responses"):
                    stream_sse(self, (f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in
                                      responses_events(turn, request)), pace=server.chunk_delay, drop_after=drop)
                    return
                chunks = (f"data: {json.dumps(chunk)}\n\n" for chunk in
                          _cut_to_limit(_stream_chunks(turn, request), request))
                stream_sse(self, itertools.chain(chunks, ["data: [DONE]\n\n"]), pace=server.chunk_delay,
                           drop_after=drop)

            def _send_json(self, status: int, body: str) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _usage(turn: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    usage = dict(turn.get("usage") or {})
    if not usage:
        prompt = len(json.dumps(request.get("messages", []))) // 4
        completion = max(1, len(turn.get("text", "")) // 4)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    cached, reasoning = usage.pop("cached_tokens", None), usage.pop("reasoning_tokens", None)
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}


def _output_limit(request: dict[str, Any]) -> int | None:
    """Characters of output the request allows (4 a token), or None without a limit."""
    limit = request.get("max_completion_tokens") or request.get("max_tokens")
    return int(limit) * 4 if limit else None


def _cut_to_limit(chunks: Any, request: dict[str, Any]) -> Any:
    """The reply's chunks, cut where the output passes the request's limit: the finish reason becomes "length"
    (the usage chunk still comes)."""
    left = _output_limit(request)
    cut = False
    for chunk in chunks:
        choices = chunk.get("choices") or []
        if left is None or not choices:
            yield chunk
            continue
        if cut or choices[0].get("finish_reason"):
            if not cut:
                yield chunk
            continue
        delta = choices[0]["delta"]
        for key in ("reasoning_content", "content"):
            if delta.get(key):
                delta[key], left = delta[key][:max(0, left)], left - len(delta[key])
        for call in delta.get("tool_calls") or []:
            args = call.get("function", {}).get("arguments")
            if args:
                call["function"]["arguments"], left = args[:max(0, left)], left - len(args)
        if left >= 0 or any(delta.get(k) for k in ("reasoning_content", "content")) or _has_arguments(delta):
            yield chunk
        if left < 0:
            cut = True
            yield {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}


def _has_arguments(delta: dict[str, Any]) -> bool:
    return any(call.get("function", {}).get("arguments") for call in delta.get("tool_calls") or [])


def _raw_arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _stream_chunks(turn: dict[str, Any], request: dict[str, Any]):
    base = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": request.get("model", "scripted")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    reasoning = turn.get("reasoning", "")
    for start in range(0, len(reasoning), 8):
        yield chunk({"reasoning_content": reasoning[start:start + 8]})
    text = turn.get("text", "")
    step = int(turn.get("chunk_chars", 8))
    for start in range(0, len(text), step):
        yield chunk({"content": text[start:start + step]})
    if "stream_error" in turn:  # an error event in the middle of the stream, as OpenAI sends one
        yield {"error": {"message": turn["stream_error"], "type": "server_error"}}
        return
    calls = turn.get("tool_calls", [])
    for index, call in enumerate(calls):
        call_id = call.get("id", f"call_{index}_{abs(hash(_raw_arguments(call))) % 10**8}")
        raw = _raw_arguments(call)
        yield chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                      "function": {"name": call["name"], "arguments": ""}}]})
        # Arguments arrive in pieces, as real providers send them.
        for start in range(0, len(raw), 10):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": raw[start:start + 10]}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if (request.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": _usage(turn, request)}


def _whole_response(turn: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": f"call_{i}", "type": "function",
              "function": {"name": c["name"], "arguments": _raw_arguments(c)}}
             for i, c in enumerate(turn.get("tool_calls", []))]
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("text", "")}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _usage(turn, request)}


def main() -> None:
    turns = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else []
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
    server = ScriptedOpenAIServer(turns, chunk_delay=delay)
    print(server.url, flush=True)
    server._httpd.serve_forever()


if __name__ == "__main__":
    main()

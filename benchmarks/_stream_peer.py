"""The two ends of a paced stream, for bench_stream.py (not a benchmark itself).

``serve TURNS.json TIMINGS.jsonl``: the project's scripted OpenAI-compatible server
(tests/support/openai_server.py), with its text chunks paced by the clock instead of a fixed sleep:
a turn's ``rate`` (chunks a second; with 4-character chunks one chunk is about one token) schedules chunk
``i`` at ``start + i / rate``, so per-chunk overhead cannot slow the source below its nominal rate, and a
late chunk is sent as soon as it can be. For every streamed turn it appends one JSON line to TIMINGS:
``first`` and ``last`` (time.monotonic() when the first and last text chunks were written; CLOCK_MONOTONIC
is system-wide on Linux, so the benchmark can compare it with its own clock) and ``chunks``.
Prints its URL on the first line, like the original. It also appends ``{"request": t}`` (time.monotonic() when a
request's first line had arrived) for every request: the moment a client's first request byte is on the wire.

``serve-prerendered TURNS.json``: the same server, but each turn's events are rendered to bytes when the server
starts and written 256 KB at a time (no pacing, no timings), so that a client reading a fast stream (bench_chunks'
tool-call arguments) is measured rather than the server's own ``json.dumps`` and write per event.

``serve-anthropic TURNS.json TIMINGS.jsonl``: the local Anthropic Messages API server
(tests/support/anthropic_server.py), unpaced, with the same request timings.

``client URL``: the reference consumer: streams one completion from URL with the standard library and
prints each text delta as it arrives (no Markdown, no layout): what the terminal and tmux cost alone.

``litellm URL``: the same through litellm's streaming (anvil's ``load_litellm()``, ``acompletion``), printing
each delta: what litellm's per-chunk processing adds before any UI is involved.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support import anthropic_server, openai_server  # the repository root is put on sys.path above

_original_chunks = openai_server._stream_chunks
_timings_lock = threading.Lock()


def _paced_chunks(timings: Path) -> Any:
    def chunks(turn: dict[str, Any], request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        rate = float(turn.get("rate") or 0)
        start = time.monotonic()
        first = last = 0.0
        count = 0
        for chunk in _original_chunks(turn, request):
            choices = chunk.get("choices") or [{}]
            is_text = bool(choices[0].get("delta", {}).get("content"))
            if is_text and rate:
                wait = start + count / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            yield chunk  # the server writes and flushes it before asking for the next one
            if is_text:
                last = time.monotonic()
                first = first or last
                count += 1
        with _timings_lock, timings.open("a") as file:
            file.write(json.dumps({"first": first, "last": last, "chunks": count}) + "\n")

    return chunks


def _timed_requests(server_class: Any, timings: Path) -> None:
    """Make ``server_class``'s handlers log when each request's first line has arrived."""
    make_handler = server_class._handler_class

    def handler_class(self: Any) -> Any:
        base = make_handler(self)

        class Timed(base):  # type: ignore[misc, valid-type]
            def parse_request(self) -> bool:
                with _timings_lock, timings.open("a") as file:
                    file.write(json.dumps({"request": time.monotonic()}) + "\n")
                parsed = bool(super().parse_request())
                self.path = self.path.split("?", 1)[0]  # Claude Code asks for /v1/messages?beta=true
                return parsed

        return Timed

    server_class._handler_class = handler_class


def serve(turns_path: Path, timings: Path) -> None:
    openai_server._stream_chunks = _paced_chunks(timings)
    _timed_requests(openai_server.ScriptedOpenAIServer, timings)
    server = openai_server.ScriptedOpenAIServer(json.loads(turns_path.read_text()))
    print(server.url, flush=True)
    server._httpd.serve_forever()


#: how much of a pre-rendered stream is written at once
_BATCH = 256 * 1024


def _rendered(turn: dict[str, Any], usage: bool) -> bytes:
    """A turn's whole SSE body, as the scripted server writes it event by event (its own chunk builder)."""
    request: dict[str, Any] = {"model": "scripted", "stream": True}
    if usage:
        request["stream_options"] = {"include_usage": True}
    events = [f"data: {json.dumps(chunk)}\n\n" for chunk in openai_server._stream_chunks(turn, request)]
    return "".join([*events, "data: [DONE]\n\n"]).encode()


class PrerenderedServer(openai_server.ScriptedOpenAIServer):
    """The scripted server with every turn's stream rendered before the first request: a request that asks for
    usage gets the body with the usage chunk. Requests with an output limit or a fault turn are refused (the
    benchmark sends neither)."""

    def __init__(self, turns: list[dict[str, Any]]) -> None:
        super().__init__(turns)
        cache: dict[tuple[str, bool], bytes] = {}
        for turn in turns:
            for usage in (False, True):
                cache.setdefault((json.dumps(turn, sort_keys=True), usage), _rendered(turn, usage))
        self.bodies = cache

    def _handler_class(self) -> Any:
        server = self
        base = super()._handler_class()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                turn = server._next_turn()
                if "status" in turn or not request.get("stream") or openai_server._output_limit(request):
                    self.send_error(400, "the pre-rendered server streams scripted turns only")
                    return
                usage = bool((request.get("stream_options") or {}).get("include_usage"))
                body = server.bodies[json.dumps(turn, sort_keys=True), usage]
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                view = memoryview(body)
                for start in range(0, len(body), _BATCH):
                    self.wfile.write(view[start:start + _BATCH])
                self.wfile.flush()
                self.close_connection = True

        return Handler


def serve_prerendered(turns_path: Path) -> None:
    server = PrerenderedServer(json.loads(turns_path.read_text()))
    print(server.url, flush=True)
    server._httpd.serve_forever()


def serve_anthropic(turns_path: Path, timings: Path) -> None:
    _timed_requests(anthropic_server.ScriptedAnthropicServer, timings)
    # Answered as they come: Claude Code (bench_first_request's peer) sends requests the tests' strict checks
    # refuse (its own roles and beta fields); what is measured here is time, not request shapes.
    anthropic_server.validate = lambda request: None
    server = anthropic_server.ScriptedAnthropicServer(json.loads(turns_path.read_text()))
    print(server.url, flush=True)
    server._httpd.serve_forever()


def client(url: str) -> None:
    body = json.dumps({"model": "scripted", "stream": True,
                       "messages": [{"role": "user", "content": "stream"}]}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            text = choices[0].get("delta", {}).get("content")
            if text:
                sys.stdout.write(text)
                sys.stdout.flush()
    time.sleep(3600)  # keep the text on screen until the benchmark kills the session


async def litellm_client(url: str) -> None:
    from anvil.core.model.litellm_model import load_litellm

    litellm = load_litellm()
    response = await litellm.acompletion(model="openai/scripted", api_base=url, api_key="sk-local-bench",
                                         stream=True, messages=[{"role": "user", "content": "stream"}])
    async for chunk in response:
        text = chunk.choices[0].delta.content if chunk.choices else None
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
    await asyncio.sleep(3600)  # keep the text on screen until the benchmark kills the session


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "serve-prerendered":
        serve_prerendered(Path(sys.argv[2]))
    elif sys.argv[1] == "serve-anthropic":
        serve_anthropic(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "litellm":
        asyncio.run(litellm_client(sys.argv[2]))
    else:
        client(sys.argv[2])

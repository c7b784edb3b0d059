"""Assembling a streamed reply: anvil's StreamAssembler against litellm's ``stream_chunk_builder``.

Real chunks first: the scripted server (tests/support/openai_server.py, in its own process) streams a
2,000-token text reply in 4-character chunks and a tool call whose JSON arguments arrive in 10-character
pieces, through litellm's ``acompletion``; the time that takes is litellm's own share (the reference: what
a chunk costs before anvil sees it). Then both assemblers run over the same chunk objects:

- anvil: ``StreamAssembler.add`` per chunk (paid while the reply streams) and ``build`` at the end;
- litellm: ``stream_chunk_builder(chunks)``, all of it after the last chunk.

Figures: µs per chunk, the time spent after the last chunk (which delays the reply's end and its tool
calls), and tool-call arguments assembled per second (issue 24 asks for at least 1 MB/s). First, end to end:
a tool call with 1 MB of arguments in 10-character pieces through anvil's model adapter (``LiteLLMModel.stream``:
litellm builds and sends the request; OpenAI-compatible streams are read lean), against a plain reader of the
same stream (the standard library, each event's JSON parsed). That server (benchmarks/_stream_peer.py
``serve-prerendered``) renders its events to bytes before the request and writes them in large batches, so the
figure is the client's, not the server's ``json.dumps`` and write per event.

Run: python benchmarks/bench_chunks.py [--quick] [--end-to-end]   (--end-to-end: only the first part)
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from anvil.core.model.chunks import StreamAssembler  # noqa: E402  (after the path set-up)
from anvil.core.model.litellm_model import load_litellm  # noqa: E402


async def receive(litellm: Any, url: str) -> tuple[list[Any], float]:
    start = time.perf_counter()
    response = await litellm.acompletion(model="openai/scripted", api_base=url, api_key="bench", stream=True,
                                         messages=[{"role": "user", "content": "go"}],
                                         stream_options={"include_usage": True})
    chunks = [chunk async for chunk in response]
    return chunks, time.perf_counter() - start


def ours(chunks: list[Any]) -> tuple[float, float, Any]:
    """(seconds over all chunks, seconds for build() after the last one, the completion)."""
    assembler = StreamAssembler()
    start = time.perf_counter()
    for chunk in chunks:
        assembler.add(chunk)
    end = time.perf_counter()
    completion = assembler.build()
    done = time.perf_counter()
    return done - start, done - end, completion


def theirs(litellm: Any, chunks: list[Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    response = litellm.stream_chunk_builder(chunks)
    return time.perf_counter() - start, response


async def through_anvil(url: str) -> tuple[float, int]:
    """A tool call streamed through anvil's model adapter (litellm's request, the lean stream for
    OpenAI-compatible servers, the assembler): seconds from the call to the completion, argument bytes."""
    from anvil.core.model.litellm_model import LiteLLMModel

    model = LiteLLMModel("openai/scripted", api_base=url, api_key="bench")
    start = time.perf_counter()
    async for item in model.stream([{"role": "user", "content": "go"}], []):
        completion = item
    seconds = time.perf_counter() - start
    return seconds, sum(len(call.arguments) for call in completion.tool_calls)  # type: ignore[union-attr]


def plain_reader(url: str) -> float:
    """The reference: the same stream read with the standard library, each event's JSON parsed, nothing else."""
    import urllib.request

    body = json.dumps({"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "go"}]})
    start = time.perf_counter()
    request = urllib.request.Request(f"{url}/chat/completions", body.encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=300) as response:
        for raw in response:
            if raw.startswith(b"data: {"):
                json.loads(raw[6:])
    return time.perf_counter() - start


def end_to_end(megabytes: float, rounds: int) -> None:
    arguments = json.dumps({"path": "big.txt", "content": "x" * int(megabytes * 1e6)})
    turn = {"tool_calls": [{"name": "write_file", "arguments": arguments}]}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "turns.json"
        script.write_text(json.dumps([{"text": "warm up"}] + [turn] * (2 * rounds)))
        server = subprocess.Popen([sys.executable, str(ROOT / "benchmarks/_stream_peer.py"), "serve-prerendered",
                                   str(script)], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            asyncio.run(through_anvil(url))  # the warm-up turn: imports, connections
            ours_ = [asyncio.run(through_anvil(url)) for _ in range(rounds)]
            plain = [plain_reader(url) for _ in range(rounds)]
        finally:
            server.kill()
            server.wait()
    size = len(arguments) / 1e6
    assert all(got == len(arguments) for _, got in ours_), "the arguments arrived incomplete"
    anvil_rate = size / statistics.median(s for s, _ in ours_)
    plain_rate = size / statistics.median(plain)
    print(f"tool-call arguments end to end, {size:.2f} MB in 10-character pieces, median of {rounds} "
          "(server -> litellm request -> anvil's stream -> completion)")
    print(f"  plain reader, stdlib + json per event (reference)  {plain_rate:6.2f} MB/s")
    print(f"  anvil LiteLLMModel.stream                          {anvil_rate:6.2f} MB/s   "
          f"{anvil_rate / plain_rate:.2f}x of the reference")
    print(f"  GOAL 3 tool-call arguments {anvil_rate:5.2f} MB/s (budget 1 MB/s; plain reader {plain_rate:.2f} MB/s)")


def main() -> None:
    quick = "--quick" in sys.argv
    end_to_end(0.1 if quick else 1.0, 1 if quick else 3)
    if "--end-to-end" in sys.argv:
        return
    argument_bytes, rounds = (20_000, 1) if quick else (200_000, 5)
    arguments = json.dumps({"path": "big.txt", "content": "x" * argument_bytes})
    turns = [{"text": "warm up"}, {"text": "word " * 1600, "chunk_chars": 4},
             {"tool_calls": [{"name": "write_file", "arguments": arguments}]}]
    litellm = load_litellm()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "turns.json"
        script.write_text(json.dumps(turns))
        server = subprocess.Popen([sys.executable, str(ROOT / "tests/support/openai_server.py"), str(script)],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            asyncio.run(receive(litellm, url))
            text_chunks, text_seconds = asyncio.run(receive(litellm, url))
            tool_chunks, tool_seconds = asyncio.run(receive(litellm, url))
        finally:
            server.kill()
            server.wait()
    print(f"assembling a streamed reply, median of {rounds} rounds (bench_chunks)")
    for label, chunks, received in (("2,000-token text reply", text_chunks, text_seconds),
                                    (f"tool call, {len(arguments) / 1e3:,.0f} KB of arguments", tool_chunks,
                                     tool_seconds)):
        runs = [ours(chunks) for _ in range(rounds)]
        whole = statistics.median(r[0] for r in runs)
        at_end = statistics.median(r[1] for r in runs)
        builder = statistics.median(theirs(litellm, chunks)[0] for _ in range(rounds))
        completion = runs[0][2]
        response = theirs(litellm, chunks)[1]
        message = response.choices[0].message
        same = (completion.text == (message.content or "") and [c.arguments for c in completion.tool_calls]
                == [c.function.arguments for c in message.tool_calls or []])
        per = 1e6 / len(chunks)
        print(f"  {label}: {len(chunks):,} chunks{'' if same else '  (THE TWO ASSEMBLIES DIFFER)'}")
        print(f"    litellm's stream, receiving (reference)  {received * per:7.1f} µs/chunk")
        print(f"    anvil StreamAssembler                    {whole * per:7.1f} µs/chunk   "
              f"after the last chunk {at_end * 1e3:7.2f} ms")
        print(f"    litellm stream_chunk_builder             {builder * per:7.1f} µs/chunk   "
              f"after the last chunk {builder * 1e3:7.2f} ms   ratio {builder / whole:5.2f}x")
        if completion.tool_calls:
            size = len(arguments) / 1e6
            print(f"    arguments assembled: anvil {size / whole:6.2f} MB/s, stream_chunk_builder "
                  f"{size / builder:6.2f} MB/s, litellm's stream itself {size / received:6.3f} MB/s "
                  "(budget, issue 24: 1 MB/s)")


if __name__ == "__main__":
    main()

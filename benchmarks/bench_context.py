"""Context accounting and tier-1 compaction at large histories, with litellm's real tokenizer.

1. Per-step accounting at a 100k-token history: what the loop does for the gauge each step (count the new
   assistant message and tool result, take the provider's usage, measure before the next call, decide on
   compaction). Budget (DESIGN.md): under 5 ms. Reference: one full recount of the same history with
   litellm's counter, the cost a non-incremental gauge would pay every step.
2. Tier-1 compaction of a 150k-token history (stubs, no model call). Budget: under 50 ms. Reference:
   serialising the same history to JSON once (what sending or recording it costs anyway).

Run: python benchmarks/bench_context.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from anvil.core.context.compaction import Compactor
from anvil.core.context.meter import ContextMeter, TokenCounter
from anvil.core.model.litellm_model import load_litellm
from anvil.core.model.protocol import Usage

MODEL = "openai/gpt-4o"
TOOLS = [{"type": "function", "function": {"name": f"tool{i}", "description": "A tool. " * 20, "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}} for i in range(12)]


def result_text(index: int, chars: int) -> str:
    line = f"src/module_{index}.py:{{n}}: def handler_{index}(request, context): return compute(request.body)\n"
    text = "".join(line.format(n=n) for n in range(chars // len(line) + 1))
    return text[:chars]


def step(index: int, result_chars: int = 2000) -> list[dict[str, Any]]:
    """One model step: an assistant tool call and its result."""
    call_id = f"call_{index}"
    arguments = json.dumps({"path": f"src/module_{index}.py"})
    return [{"role": "assistant", "content": f"Reading module {index}.", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": result_text(index, result_chars)}]


def history(tokens: int, counter: TokenCounter) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are anvil. " * 200},
                                      {"role": "user", "content": "Refactor the handlers."}]
    total, index = 0, 0
    while total < tokens:
        for message in step(index, 6000):
            total += counter.count_message(message)
            messages.append(message)
        index += 1
    return messages


def per_step_ms(base: list[dict[str, Any]], steps: int) -> float:
    counter = TokenCounter(MODEL)
    meter = ContextMeter(400_000, counter)
    compactor = Compactor(meter, _no_model, 0.85)
    messages = list(base)
    meter.measure(messages, TOOLS)  # the history was counted as it grew; a step only adds to it
    new = [step(10_000 + i) for i in range(steps)]
    prompt = meter.used
    start = time.perf_counter()
    for assistant, result in new:
        messages.append(assistant)
        prompt += 600
        meter.after_response(Usage(prompt, 40), messages)
        messages.append(result)
        meter.after_message(messages)
        compactor.should_compact(meter.measure(messages, TOOLS))
    return (time.perf_counter() - start) / steps * 1000


def full_recount_ms(messages: list[dict[str, Any]]) -> float:
    litellm = load_litellm()
    start = time.perf_counter()
    litellm.token_counter(model=MODEL, messages=messages, tools=TOOLS)
    return (time.perf_counter() - start) * 1000


async def _no_model(request: list[dict[str, Any]]) -> str:
    raise AssertionError("tier 1 must not call the model")


def tier1_ms(base: list[dict[str, Any]]) -> tuple[float, int, int]:
    meter = ContextMeter(200_000, TokenCounter(MODEL))
    compactor = Compactor(meter, _no_model, 0.85)
    messages = list(base)
    before = meter.measure(messages, TOOLS)  # counted incrementally in real use, before compaction starts
    start = time.perf_counter()
    outcome = asyncio.run(compactor.compact(messages, todos="No todos yet."))
    elapsed = (time.perf_counter() - start) * 1000
    assert outcome.tier == 1, outcome
    return elapsed, before, outcome.tokens_after


def serialise_ms(messages: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    json.dumps(messages)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    quick = "--quick" in sys.argv
    steps, rounds = (20, 1) if quick else (200, 5)
    counter = TokenCounter(MODEL)
    load_litellm()
    print(f"context accounting with litellm's tokenizer for {MODEL} (median of {rounds} rounds)")
    h100 = history(100_000, counter)
    step_ms = statistics.median(per_step_ms(h100, steps) for _ in range(rounds))
    recount = statistics.median(full_recount_ms(h100) for _ in range(rounds))
    verdict = "ok" if step_ms < 5 else "OVER BUDGET"
    print(f"  per step at 100k tokens      {step_ms:7.3f} ms   (budget 5 ms: {verdict})")
    print(f"  reference: full recount      {recount:7.3f} ms   (what a non-incremental gauge pays per step)")
    h150 = history(150_000, counter)
    runs = [tier1_ms(h150) for _ in range(rounds)]
    compact_ms = statistics.median(r[0] for r in runs)
    _, before, after = runs[0]
    reference = statistics.median(serialise_ms(h150) for _ in range(rounds))
    verdict = "ok" if compact_ms < 50 else "OVER BUDGET"
    print(f"  tier-1 compaction, 150k      {compact_ms:7.3f} ms   (budget 50 ms: {verdict}; "
          f"{before:,} -> {after:,} tokens)")
    print(f"  reference: json.dumps        {reference:7.3f} ms   (serialising the same history once)")


if __name__ == "__main__":
    main()

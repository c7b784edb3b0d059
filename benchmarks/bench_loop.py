"""Loop overhead per step, model and tool time excluded, at 10k- and 100k-token histories.

A step is one model call plus one tool call. The model here answers instantly from a precomputed
reply and the tool does nothing, so what is left is the loop's own work: events, history, session
records, context accounting, argument validation. Budget (DESIGN.md): under 5 ms per step.

Run: python benchmarks/bench_loop.py [--quick]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from anvil.core.events import ToolCall
from anvil.core.loop.agent import Agent
from anvil.core.model.protocol import Completion, StreamItem, Usage
from anvil.core.session.store import SessionStore
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult


class NoteArgs(ToolArgs):
    text: str


class NoopTool(Tool):
    name = "note"
    description = "Does nothing."
    Args = NoteArgs

    async def run(self, args: NoteArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult("noted " + args.text)


class InstantModel:
    """Calls the tool ``steps`` times, then answers; reports a large prompt like a real provider."""

    name = "instant"

    def __init__(self, steps: int, history_tokens: int) -> None:
        self.steps = steps
        self.history_tokens = history_tokens
        self.calls = 0

    def context_window(self) -> int:
        return 200_000

    def accepts_images(self) -> bool:
        return False

    def preflight(self) -> None:
        return None

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> AsyncIterator[StreamItem]:
        self.calls += 1
        usage = Usage(self.history_tokens + self.calls * 40, 20)
        yield "Working on it. "
        if self.calls <= self.steps:
            yield Completion("Working on it. ", [ToolCall(f"c{self.calls}", "note", '{"text": "step"}')], usage)
        else:
            yield Completion("Done.", [], usage)


def history(tokens: int) -> list[dict[str, Any]]:
    # ~4 characters a token; alternating user/assistant messages of 2,000 characters.
    block = ("lorem ipsum dolor sit amet " * 80)[:2000]
    count = max(1, tokens * 4 // len(block))
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": block} for i in range(count)]


async def measure(history_tokens: int, steps: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        session = SessionStore(root / "data", root).create("instant", "bench")
        model = InstantModel(steps, history_tokens)
        agent = Agent(model, ToolRegistry([NoopTool()]), ToolContext(root=root, data_dir=root / "data"),
                      system_prompt="bench", session=session, max_iterations=steps + 5,
                      history=history(history_tokens))
        start = time.perf_counter()
        async for _ in agent.run_turn("go"):
            pass
        elapsed = time.perf_counter() - start
        session.close()
        return elapsed / (steps + 1) * 1000


def main() -> None:
    quick = "--quick" in sys.argv
    steps, rounds = (20, 1) if quick else (200, 5)
    print(f"loop overhead per step ({steps} steps, median of {rounds} rounds; model and tool time excluded)")
    for tokens in (10_000, 100_000):
        value = statistics.median(asyncio.run(measure(tokens, steps)) for _ in range(rounds))
        verdict = "ok" if value < 5 else "OVER BUDGET"
        print(f"  history {tokens // 1000:>4}k tokens   {value:6.3f} ms/step   (budget 5 ms: {verdict})")


if __name__ == "__main__":
    main()

"""Test tools and agent builders shared by the loop, context and sub-agent tests."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from anvil.core.events import ApprovalDecision, ApprovalRequested, Event, TurnEnded
from anvil.core.loop.agent import Agent
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Reasoning
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from tests.support.anthropic_server import ScriptedAnthropicServer
from tests.support.openai_server import ScriptedOpenAIServer


class EchoArgs(ToolArgs):
    text: str


class EchoTool(Tool):
    """Reads nothing, changes nothing, never asks: the simplest tool call."""

    name = "echo"
    description = "Echo the text back."
    Args = EchoArgs

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def run(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        self.seen.append(args.text)
        return ToolResult(f"echo: {args.text}")


class SlowTool(Tool):
    """Runs for 30 s unless cancelled; ``started`` is set when it runs, ``cancelled`` when it was stopped."""

    name = "slow"
    description = "Takes a long time."
    Args = ToolArgs

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return ToolResult("finished")


class GuardedArgs(ToolArgs):
    text: str = ""


class GuardedTool(Tool):
    """Asks unless a tool rule allows it; counts its runs."""

    name = "guarded"
    description = "Needs approval."
    Args = GuardedArgs
    mutates = True
    approval = "rule"

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, args: GuardedArgs, ctx: ToolContext) -> ToolResult:
        self.runs += 1
        return ToolResult(f"guarded ran with {args.text}" if args.text else "guarded ran")


class BigArgs(ToolArgs):
    name: str


class BigTool(Tool):
    """A read-only tool with a large result (~12 tokens a line)."""

    name = "big"
    description = "Return a big text."
    Args = BigArgs
    lines = 60

    async def run(self, args: BigArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult("".join(f"{args.name} line {i}: the quick brown fox jumps over the lazy dog\n"
                                  for i in range(self.lines)))


def make_agent(server: ScriptedOpenAIServer, tmp_path: Path, *tools: Tool, **kwargs: Any) -> Agent:
    """An agent on litellm's real path against the scripted server, with fast retries."""
    model = LiteLLMModel("openai/scripted", api_base=server.url,
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02))
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data")
    return Agent(model, ToolRegistry(list(tools)), ctx, system_prompt="You are a test.", **kwargs)


#: a real model name, so that litellm's own prices and limits apply; the fixture answers in its place
CLAUDE = "anthropic/claude-sonnet-4-5"


def make_claude_agent(server: ScriptedAnthropicServer, tmp_path: Path, *tools: Tool, reasoning: str = "off",
                      budget: int | None = None, caching: bool = True, max_output_tokens: int | None = None,
                      **kwargs: Any) -> Agent:
    """An agent on litellm's real Anthropic path against the local Messages API server."""
    model = LiteLLMModel(CLAUDE, api_base=server.url, api_key="test-key", reasoning=Reasoning(reasoning, budget),  # type: ignore[arg-type]
                         retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02), prompt_caching=caching,
                         max_output_tokens=max_output_tokens)
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data")
    return Agent(model, ToolRegistry(list(tools)), ctx, system_prompt=kwargs.pop("system_prompt", "You are a test."),
                 **kwargs)


async def run(agent: Agent, text: str = "go", answer: ApprovalDecision | None = None) -> list[Event]:
    """One turn's events; approval requests get ``answer`` (left pending without one)."""
    events: list[Event] = []
    async for event in agent.run_turn(text):
        if isinstance(event, ApprovalRequested) and answer is not None:
            event.answer(answer)
        events.append(event)
    return events


def ended(events: list[Any]) -> TurnEnded:
    last = events[-1]
    assert isinstance(last, TurnEnded)
    return last


def assert_history_valid(messages: list[dict[str, Any]]) -> None:
    """Every assistant tool call is answered by a tool message before the next non-tool message."""
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "tool":
            pending.discard(message["tool_call_id"])
            continue
        assert not pending, f"tool calls without results: {pending}"
        for call in message.get("tool_calls") or []:
            pending.add(call["id"])
    assert not pending

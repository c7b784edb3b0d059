"""Models that speak only OpenAI's Responses API (the codex models) work through litellm's bridge: it sends
anvil's conversation as Responses ``input`` items and streams text, reasoning summaries and tool calls back as
chat chunks. Tested against the scripted server's ``/v1/responses`` stream."""

from __future__ import annotations

from pathlib import Path

from anvil.core.events import ReasoningDelta, TextDelta, TurnEnded, UsageReport
from anvil.core.loop.agent import Agent
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Reasoning
from anvil.core.tools.base import ToolContext, ToolRegistry
from tests.support.agents import EchoTool, assert_history_valid, run
from tests.support.openai_server import ScriptedOpenAIServer

CODEX = "openai/gpt-5-codex"


async def test_a_codex_model_streams_and_calls_tools_through_the_bridge(server: ScriptedOpenAIServer,
                                                                      tmp_path: Path) -> None:
    call = {"name": "echo", "arguments": {"text": "hi"}}
    usage = {"prompt_tokens": 500, "completion_tokens": 20, "cached_tokens": 400, "reasoning_tokens": 4}
    server.add({"reasoning": "Echo it.", "text": "Echoing.", "tool_calls": [call], "usage": usage},
               {"text": "It said hi."})
    tool = EchoTool()
    model = LiteLLMModel(CODEX, api_base=server.url, api_key="k", reasoning=Reasoning("low"),
                         retry=RetryPolicy(max_attempts=1))
    agent = Agent(model, ToolRegistry([tool]), ToolContext(root=tmp_path, data_dir=tmp_path / "d"),
                  system_prompt="You are a test.")
    events = await run(agent)

    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert tool.seen == ["hi"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Echoing.It said hi."
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Echo it."
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (500, 400, 4)
    assert usage.cost is not None and usage.cost > 0  # litellm prices codex models
    first, second = server.requests
    assert first["reasoning"]["effort"] == "low"
    # litellm sends the system prompt as instructions (1.106.0) or as the first input item (1.106.12 on)
    system = first.get("instructions") or first["input"][0]["content"]
    assert "You are a test." in str(system)
    kinds = [item["type"] for item in second["input"]]
    assert kinds[-2:] == ["function_call", "function_call_output"]  # the tool result went back
    assert_history_valid(agent.messages)


async def test_a_codex_reply_cut_at_max_output_tokens_is_not_run(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    call = {"name": "echo", "arguments": {"text": "z" * 400}}
    server.add({"tool_calls": [call]}, {"tool_calls": [call]}, {"text": "Smaller, then."})
    tool = EchoTool()
    model = LiteLLMModel(CODEX, api_base=server.url, api_key="k", max_output_tokens=16,
                         retry=RetryPolicy(max_attempts=1))
    agent = Agent(model, ToolRegistry([tool]), ToolContext(root=tmp_path, data_dir=tmp_path / "d"),
                  system_prompt="You are a test.")
    events = await run(agent)

    assert tool.seen == []  # "response.incomplete" is a cut-off: the cut call never ran
    assert [r["max_output_tokens"] for r in server.requests] == [16, 32, 16]
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert_history_valid(agent.messages)

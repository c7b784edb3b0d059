"""Replies cut off at the output limit (finish_reason "length"), through litellm against the local servers: a
tool call with cut arguments never runs; the step is retried once with a larger limit; text is continued."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil.core.events import Notice, TurnEnded
from anvil.core.loop.cutoff import CUT_PLACEHOLDER, MAX_CONTINUATIONS
from anvil.core.model.errors import RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel
from tests.support.agents import EchoTool, assert_history_valid, make_agent, make_claude_agent, run
from tests.support.anthropic_server import ScriptedAnthropicServer
from tests.support.openai_server import ScriptedOpenAIServer


def limited(agent: Any, tokens: int, retry: int | None = None) -> None:
    model = agent.model
    assert isinstance(model, LiteLLMModel)
    model.max_output_tokens, model.retry_output_tokens = tokens, retry
    model.retry = RetryPolicy(max_attempts=1)


def notices(events: list[Any]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def echo(text: str) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}}


async def test_a_tool_call_cut_mid_json_is_retried_once_with_a_larger_limit(server: ScriptedOpenAIServer,
                                                                            tmp_path: Path) -> None:
    long = "a" * 150  # about 45 tokens of arguments: cut under a 30-token limit
    server.add({"tool_calls": [echo(long)]}, {"tool_calls": [echo(long)]}, {"text": "Done."})
    tool = EchoTool()
    agent = make_agent(server, tmp_path, tool)
    limited(agent, 30)
    events = await run(agent)

    assert tool.seen == [long]  # only the whole call ran, once
    assert server.requests[0]["max_tokens"] == 30 and server.requests[1]["max_tokens"] == 60
    assert notices(events) == ["The reply stopped at the output limit in the middle of a tool call, which was not "
                               "run; retrying once with a limit of 60 tokens."]
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert server.requests[1]["messages"] == server.requests[0]["messages"]  # the cut reply never joined the history
    assert_history_valid(agent.messages)
    assert agent.usage.totals["completion_tokens"] > 0 and len(
        [e for e in events if type(e).__name__ == "UsageReport"]) == 3  # the cut reply's tokens count too


async def test_a_tool_call_cut_again_is_not_run_and_the_model_is_told(server: ScriptedOpenAIServer,
                                                                      tmp_path: Path) -> None:
    long = "b" * 300
    server.add({"tool_calls": [echo(long)]}, {"tool_calls": [echo(long)]}, {"text": "I will write it in parts."})
    tool = EchoTool()
    agent = make_agent(server, tmp_path, tool)
    limited(agent, 20, retry=40)
    events = await run(agent)

    assert tool.seen == []  # never run with broken JSON
    cut_args = json.dumps({"text": long})[:160]
    assert server.requests[1]["max_tokens"] == 40
    kept = server.requests[2]["messages"]
    assert kept[-2] == {"role": "assistant", "content": CUT_PLACEHOLDER}  # no call with cut arguments is kept
    assert "was not run: its arguments were incomplete" in kept[-1]["content"] and kept[-1]["role"] == "user"
    assert cut_args not in json.dumps(kept)
    assert any("the call was not run" in n for n in notices(events))
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert_history_valid(agent.messages)


async def test_a_text_reply_cut_off_is_continued(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"text": "The first part of a long answer, which goes on and on."}, {"text": " The rest."})
    agent = make_agent(server, tmp_path)
    limited(agent, 8)
    events = await run(agent)

    assert notices(events) == ["The reply stopped at the output limit; anvil asked the model to continue."]
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "The first part of a long answer,"}
    assert second[-1]["role"] == "user" and "Continue exactly where it stopped" in second[-1]["content"]
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"


async def test_continuing_stops_after_a_few_times(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*[{"text": "x" * 100}] * (MAX_CONTINUATIONS + 1))
    agent = make_agent(server, tmp_path)
    limited(agent, 5)
    events = await run(agent)

    assert len(server.requests) == MAX_CONTINUATIONS + 1
    assert "stopped asking the model to continue" in notices(events)[-1]
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"


async def test_claude_cut_mid_tool_input_is_retried(tmp_path: Path) -> None:
    """Anthropic's stop_reason "max_tokens" mid input_json_delta, through litellm's Anthropic parser."""
    long = "c" * 200
    with ScriptedAnthropicServer([{"text": "Echoing.", "tool_calls": [echo(long)]},
                                  {"text": "Echoing.", "tool_calls": [echo(long)]}, {"text": "Done."}]) as claude:
        tool = EchoTool()
        agent = make_claude_agent(claude, tmp_path, tool, max_output_tokens=40)
        events = await run(agent)
    assert claude.errors == [] and tool.seen == [long]
    assert [r["max_tokens"] for r in claude.requests] == [40, 80, 40]
    assert any("retrying once with a limit of 80 tokens" in n for n in notices(events))

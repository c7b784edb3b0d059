"""The loop and the litellm adapter, through litellm's real HTTP path against the scripted server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from anvil.core.events import (
    ApprovalAnswered,
    ApprovalDecision,
    ApprovalRequested,
    AssistantMessage,
    ErrorEvent,
    Retrying,
    TextDelta,
    ToolCallStarted,
    ToolResultEvent,
    UsageReport,
)
from anvil.core.policy.approval import ApprovalPolicy
from tests.support.agents import EchoTool, GuardedTool, SlowTool, assert_history_valid, ended, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer


async def test_text_answer_streams_and_reports_usage(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"text": "Hello from the model, streamed in pieces.",
                "usage": {"prompt_tokens": 120, "completion_tokens": 9}})
    server.chunk_delay = 0.02  # pieces that arrive apart go on apart (those that queue up are joined)
    agent = make_agent(server, tmp_path)
    events = await run(agent, "hi")
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 2 and "".join(deltas) == "Hello from the model, streamed in pieces."
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.prompt_tokens, usage.completion_tokens) == (120, 9)
    assert ended(events).reason == "done"
    request = server.requests[0]
    assert request["stream"] is True
    assert request["messages"][0] == {"role": "system", "content": "You are a test."}
    assert request["messages"][-1] == {"role": "user", "content": "hi"}


async def test_tool_call_result_goes_back_to_the_model(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"text": "Echoing.", "tool_calls": [{"id": "c1", "name": "echo", "arguments": {"text": "ping"}}]},
               {"text": "Done."})
    echo = EchoTool()
    agent = make_agent(server, tmp_path, echo)
    events = await run(agent, "echo ping")
    assert echo.seen == ["ping"]
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    assert started.args == {"text": "ping"}
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.ok and result.output == "echo: ping"
    second = server.requests[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"] == {"name": "echo", "arguments": '{"text": "ping"}'}
    assert second[-1] == {"role": "tool", "tool_call_id": "c1", "name": "echo", "content": "echo: ping"}
    assert server.requests[0]["tools"][0]["function"]["name"] == "echo"
    assert ended(events).reason == "done" and ended(events).iterations == 2


async def test_several_tool_calls_in_one_message_run_in_order(server: ScriptedOpenAIServer,
                                                              tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "echo", "arguments": {"text": "one"}},
                               {"name": "echo", "arguments": {"text": "two"}},
                               {"name": "echo", "arguments": {"text": "three"}}]},
               {"text": "All echoed."})
    echo = EchoTool()
    agent = make_agent(server, tmp_path, echo)
    events = await run(agent, "go")
    assert echo.seen == ["one", "two", "three"]
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["echo: one", "echo: two", "echo: three"]
    assert ended(events).reason == "done"


@pytest.mark.parametrize("arguments, expected", [
    ("{not json", "not valid JSON"),
    ('{"wrong": 1}', "missing required parameter"),
    ('["a"]', "must be a JSON object"),
])
async def test_bad_arguments_become_a_tool_error_and_the_loop_goes_on(
        server: ScriptedOpenAIServer, tmp_path: Path, arguments: str, expected: str) -> None:
    server.add({"tool_calls": [{"id": "bad", "name": "echo", "arguments": arguments}]}, {"text": "Recovered."})
    echo = EchoTool()
    agent = make_agent(server, tmp_path, echo)
    events = await run(agent, "go")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert not result.ok and expected in result.output
    assert echo.seen == []
    assert server.requests[1]["messages"][-1]["content"] == result.output
    assert ended(events).reason == "done"


async def test_unknown_tool_is_reported_to_the_model(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "teleport", "arguments": {"to": "mars"}}]}, {"text": "Ok."})
    agent = make_agent(server, tmp_path, EchoTool())
    events = await run(agent, "go")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert "Unknown tool 'teleport'" in result.output and "echo" in result.output
    assert ended(events).reason == "done"


async def test_rate_limit_is_retried_visibly(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"status": 429, "error": "slow down"}, {"status": 500, "error": "oops"}, {"text": "Finally."})
    agent = make_agent(server, tmp_path)
    events = await run(agent, "hi")
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [r.attempt for r in retries] == [1, 2]
    assert "rate-limiting" in retries[0].message
    assert ended(events).reason == "done"
    assert len(server.requests) == 3


async def test_retries_are_bounded(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*[{"status": 503, "error": "overloaded"}] * 5)
    agent = make_agent(server, tmp_path)
    events = await run(agent, "hi")
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.retryable and "gave up after 3 attempts" in error.message
    assert ended(events).reason == "error"
    assert len(server.requests) == 3


async def test_auth_error_is_not_retried(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"status": 401, "error": "invalid key"}, {"text": "never reached"})
    agent = make_agent(server, tmp_path)
    events = await run(agent, "hi")
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.kind == "auth" and not error.retryable
    assert "rejected the API key" in error.message
    assert len(server.requests) == 1
    assert ended(events).reason == "error"


async def test_max_iterations_stops_the_turn(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(*[{"tool_calls": [{"name": "echo", "arguments": {"text": str(i)}}]} for i in range(10)])
    agent = make_agent(server, tmp_path, EchoTool(), max_iterations=3)
    events = await run(agent, "loop forever")
    end = ended(events)
    assert end.reason == "max_iterations" and end.iterations == 3
    assert len(server.requests) == 3
    assert_history_valid(agent.messages)


async def test_interrupt_while_streaming_keeps_history_valid(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(chunk_delay=0.05) as slow:
        slow.add({"text": "word " * 200}, {"text": "next turn works"})
        agent = make_agent(slow, tmp_path)
        events = []
        async for event in agent.run_turn("talk a lot"):
            events.append(event)
            if sum(isinstance(e, TextDelta) for e in events) == 3:
                agent.interrupt()
        assert ended(events).reason == "interrupted"
        assert agent.messages[-1]["role"] == "assistant" and "[interrupted]" in agent.messages[-1]["content"]
        events = await run(agent, "again")
        assert ended(events).reason == "done"


async def test_interrupt_during_a_tool_cancels_it(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "slow", "arguments": {}}, {"name": "echo", "arguments": {"text": "x"}}]},
               {"text": "after"})
    slow, echo = SlowTool(), EchoTool()
    agent = make_agent(server, tmp_path, slow, echo)
    events = []
    async for event in agent.run_turn("go"):
        events.append(event)
        if isinstance(event, ToolCallStarted) and event.name == "slow":
            asyncio.get_running_loop().call_later(0.1, agent.interrupt)
    assert ended(events).reason == "interrupted"
    assert slow.cancelled and echo.seen == []
    tool_messages = [m for m in agent.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["Interrupted by the user."] * 2
    assert_history_valid(agent.messages)


async def test_approval_allow_and_deny_with_message(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "guarded", "arguments": {"text": "a"}}]}, {"text": "ran"},
               {"tool_calls": [{"name": "guarded", "arguments": {"text": "b"}}]}, {"text": "ok, not running"})
    agent = make_agent(server, tmp_path, GuardedTool())
    events = await run(agent, "first", ApprovalDecision(True))
    assert any(isinstance(e, ApprovalRequested) for e in events)
    assert next(e for e in events if isinstance(e, ToolResultEvent)).output == "guarded ran with a"
    events = await run(agent, "second", ApprovalDecision(False, "use the staging server instead"))
    answered = next(e for e in events if isinstance(e, ApprovalAnswered))
    assert not answered.allow and answered.message == "use the staging server instead"
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert not result.ok and "use the staging server instead" in result.output
    assert server.requests[3]["messages"][-1]["content"] == result.output


async def test_auto_approve_skips_the_question(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "guarded", "arguments": {"text": "a"}}]}, {"text": "ran"})
    agent = make_agent(server, tmp_path, GuardedTool(), policy=ApprovalPolicy(auto_approve=True))
    events = await run(agent, "go")
    assert not any(isinstance(e, ApprovalRequested) for e in events)
    assert next(e for e in events if isinstance(e, ToolResultEvent)).ok


async def test_steering_message_joins_before_the_next_call(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "ok"})
    agent = make_agent(server, tmp_path, EchoTool())
    async for event in agent.run_turn("start"):
        if isinstance(event, ToolCallStarted):
            agent.steer("also check the tests")
    assert server.requests[1]["messages"][-1] == {"role": "user", "content": "also check the tests"}


async def test_assistant_message_event_carries_tool_calls(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add({"text": "Let me echo.", "tool_calls": [{"id": "x1", "name": "echo", "arguments": {"text": "t"}}]},
               {"text": "bye"})
    events = await run(make_agent(server, tmp_path, EchoTool()), "go")
    first = next(e for e in events if isinstance(e, AssistantMessage))
    assert first.text == "Let me echo." and first.tool_calls[0].name == "echo"
    assert json.loads(first.tool_calls[0].arguments) == {"text": "t"}

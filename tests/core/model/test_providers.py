"""Per-provider behaviour: which providers get cache breakpoints and where, how reasoning is asked for, what goes
back with an assistant message; and, through litellm against the OpenAI-compatible server, reasoning text,
cached and reasoning tokens, and a prompt prefix that stays byte-stable from step to step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.config import Settings
from anvil.core.events import AssistantMessage, ReasoningDelta, UsageReport
from anvil.core.model.caching import with_breakpoints
from anvil.core.model.chunks import StreamAssembler
from anvil.core.model.protocol import Reasoning
from anvil.core.model.providers import outgoing, reasoning_params, thinking_possible, traits_for
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime
from tests.support.agents import make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer

EPHEMERAL = {"type": "ephemeral"}


@pytest.mark.parametrize(("model", "provider", "cache", "budget"), [
    ("anthropic/claude-sonnet-4-5", "anthropic", True, True),
    ("bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", True, True),
    ("vertex_ai/claude-sonnet-4-5", "vertex_ai", True, True),
    ("vertex_ai/gemini-2.5-pro", "vertex_ai", False, True),
    ("gemini/gemini-2.5-pro", "gemini", False, True),
    ("openai/gpt-5", "openai", False, False),
    ("deepseek/deepseek-reasoner", "deepseek", False, False),
    ("bedrock/amazon.nova-pro-v1:0", "bedrock", False, False),
])
def test_which_providers_take_breakpoints_and_budgets(model: str, provider: str, cache: bool, budget: bool) -> None:
    traits = traits_for(model, provider)
    assert (traits.explicit_cache, traits.thinking_budget) == (cache, budget)


def test_reasoning_is_a_budget_where_one_is_taken_else_an_effort() -> None:
    claude, gpt = traits_for("anthropic/claude-sonnet-4-5", "anthropic"), traits_for("openai/o3", "openai")
    assert reasoning_params(Reasoning("off", 8000), claude) == {}
    assert reasoning_params(Reasoning("high"), claude) == {"reasoning_effort": "high"}
    assert reasoning_params(Reasoning("low", 8000), claude) == {"thinking": {"type": "enabled", "budget_tokens": 8000}}
    assert reasoning_params(Reasoning("medium", 8000), gpt) == {"reasoning_effort": "medium"}


def test_breakpoints_mark_tools_system_the_previous_end_and_the_last_message() -> None:
    tools = [{"type": "function", "function": {"name": n}} for n in ("a", "b")]
    call = {"id": "1", "type": "function", "function": {"name": "a", "arguments": "{}"}}
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "1", "content": "one"},
                {"role": "assistant", "content": "Next.", "tool_calls": [{**call, "id": "2"}]},
                {"role": "tool", "tool_call_id": "2", "content": "two"},
                {"role": "user", "content": [{"type": "text", "text": "steer"}]}]
    marked, marked_tools = with_breakpoints(messages, tools)

    assert "cache_control" not in marked_tools[0] and marked_tools[1]["cache_control"] == EPHEMERAL
    assert marked[0]["content"] == [{"type": "text", "text": "sys", "cache_control": EPHEMERAL}]
    assert marked[3] == {**messages[3], "cache_control": EPHEMERAL}  # the previous request ended here
    assert marked[6]["content"] == [{"type": "text", "text": "steer", "cache_control": EPHEMERAL}]
    assert [i for i, m in enumerate(marked) if m is not messages[i]] == [0, 3, 6]  # the rest untouched
    assert "cache_control" not in json.dumps(messages)  # the history itself is not changed


def test_each_provider_gets_back_only_what_it_needs() -> None:
    call = {"id": "call_1__thought__sig", "type": "function", "function": {"name": "a", "arguments": "{}"},
            "provider_specific_fields": {"thought_signature": "sig"}}
    reply = {"role": "assistant", "content": "x", "tool_calls": [call], "reasoning_content": "because",
             "thinking_blocks": [{"type": "thinking", "thinking": "because", "signature": "s"}],
             "provider_specific_fields": {"thought_signatures": ["sig"]}}
    history = [{"role": "user", "content": "go"}, reply]

    def sent(model: str, provider: str, thinking: bool = True) -> dict[str, Any]:
        return outgoing(history, traits_for(model, provider), thinking=thinking)[1]

    claude = sent("anthropic/claude-sonnet-4-5", "anthropic")
    assert "thinking_blocks" in claude and "reasoning_content" not in claude
    assert "thinking_blocks" not in sent("anthropic/claude-sonnet-4-5", "anthropic", thinking=False)
    gemini = sent("gemini/gemini-3-pro", "gemini")
    assert gemini["tool_calls"][0]["provider_specific_fields"] == {"thought_signature": "sig"}
    assert gemini["provider_specific_fields"] == {"thought_signatures": ["sig"]}
    deepseek = sent("deepseek/deepseek-reasoner", "deepseek")
    assert deepseek["reasoning_content"] == "because" and "thinking_blocks" not in deepseek
    plain = sent("openai/gpt-4o", "openai")
    assert set(plain) == {"role", "content", "tool_calls"} and plain["tool_calls"][0] == {
        k: v for k, v in call.items() if k != "provider_specific_fields"}
    assert plain["tool_calls"][0]["id"] == "call_1__thought__sig"  # ids are never changed


def test_thinking_is_possible_inside_a_tool_loop_only_after_signed_thinking() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}
    result = {"role": "tool", "tool_call_id": "1", "content": "r"}
    assert thinking_possible([{"role": "user", "content": "go"}])
    assert not thinking_possible([call, result])
    assert not thinking_possible([call, result, {"role": "user", "content": "steer"}])
    signed = {**call, "thinking_blocks": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    redacted = {**call, "thinking_blocks": [{"type": "redacted_thinking", "data": "d"}]}
    unsigned = {**call, "thinking_blocks": [{"type": "thinking", "thinking": "t"}]}
    assert thinking_possible([signed, result]) and thinking_possible([redacted, result])
    assert not thinking_possible([unsigned, result])
    assert thinking_possible([call, result, {"role": "assistant", "content": "done"}, {"role": "user", "content": "n"}])


def test_gemini_thought_signatures_on_tool_calls_are_assembled() -> None:
    class Obj:
        def __init__(self, **fields: Any) -> None:
            self.__dict__.update(fields)

    function = Obj(name="read", arguments='{"p": 1}', provider_specific_fields=None)
    call = Obj(index=0, id="call_9__thought__abc", function=function,
               provider_specific_fields={"thought_signature": "abc"})
    chunk = Obj(usage=None, choices=[Obj(finish_reason="tool_calls", delta=Obj(
        tool_calls=[call], content=None, reasoning_content="Think.", thinking_blocks=None,
        provider_specific_fields={"thought_signatures": ["abc"]}))])
    assembler = StreamAssembler()
    assembler.add(chunk)
    completion = assembler.build()
    assert completion.replay == {"reasoning_content": "Think.",
                                 "provider_specific_fields": {"thought_signatures": ["abc"]},
                                 "tool_call_fields": {"call_9__thought__abc": {"thought_signature": "abc"}}}


async def test_reasoning_and_cache_usage_from_an_openai_compatible_server(server: ScriptedOpenAIServer,
                                                                         tmp_path: Path) -> None:
    server.add({"reasoning": "Two words.", "text": "Hello there.",
                "usage": {"prompt_tokens": 900, "completion_tokens": 30, "cached_tokens": 800, "reasoning_tokens": 3}},
               {"text": "Again."})
    agent = make_agent(server, tmp_path)
    events = await run(agent, "hi")
    events += await run(agent, "more")

    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Two words."
    assert [e.reasoning for e in events if isinstance(e, AssistantMessage)] == ["Two words.", ""]
    usage = next(e for e in events if isinstance(e, UsageReport))
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (900, 800, 3)
    assert usage.cost is None and usage.total_cost is None and usage.unpriced_calls == 1  # no price: unknown
    assert agent.messages[2]["reasoning_content"] == "Two words."  # kept with its message, in the session too
    sent_back = server.requests[1]["messages"][2]
    assert sent_back == {"role": "assistant", "content": "Hello there."}  # an OpenAI-style server gets none of it


async def test_the_prompt_prefix_stays_byte_stable_from_step_to_step(server: ScriptedOpenAIServer,
                                                                     project: Path) -> None:
    """Automatic prefix caching (OpenAI, Gemini, DeepSeek) needs every request to start with the previous one,
    byte for byte: todos, modes, turns and the clock change nothing already sent."""
    todo = {"name": "todo_write", "arguments": {"todos": [{"content": "Read", "status": "in_progress"}]}}
    done = {"name": "todo_write", "arguments": {"todos": [{"content": "Read", "status": "completed"}]}}
    server.add({"text": "Planning.", "tool_calls": [todo]},
               {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
               {"tool_calls": [done]}, {"text": "Read it."}, {"text": "Second turn."})
    runtime = open_runtime(Settings(model="openai/scripted", api_base=server.url, mode="plan"), project)
    session = SessionFacade(runtime)
    async for _ in session.submit("read the readme"):
        pass
    session.set_mode("auto")
    async for _ in session.submit("and then?"):
        pass
    await session.close()

    assert len(server.requests) == 5
    for before, after in zip(server.requests, server.requests[1:], strict=False):
        sent = [json.dumps(m, sort_keys=True) for m in before["messages"]]
        assert [json.dumps(m, sort_keys=True) for m in after["messages"][:len(sent)]] == sent
        assert json.dumps(after["tools"], sort_keys=True) == json.dumps(before["tools"], sort_keys=True)

"""Context accounting against litellm's own counter: exact, incremental, and honest about estimates."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.core.context.meter import (
    REPLY_PRIMING,
    ContextMeter,
    TokenCounter,
    estimate_tokens,
    usable_window,
)
from anvil.core.events import ContextUsage, ToolResultEvent
from anvil.core.model.litellm_model import LiteLLMModel, load_litellm
from anvil.core.model.protocol import Usage
from anvil.core.tools.base import ToolContext, ToolRegistry
from tests.support.agents import EchoTool, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer

MODEL = "openai/scripted"
TOOLS = [{"type": "function", "function": {
    "name": "echo", "description": "Echo the text back.",
    "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}]


def conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a test. Project memory: indent with tabs."},
        {"role": "user", "content": "Fix the parser so that `a,b` splits into two fields."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "p.py"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "read_file",
         "content": "1\tdef parse(text):\n2\t    return [text]\n"},
        {"role": "assistant", "content": "The parser never splits; I will fix `parse`."},
    ]


@pytest.fixture(scope="module")
def litellm() -> Any:
    return load_litellm()


def test_per_message_counts_add_up_to_litellms_count_of_the_list(litellm: Any) -> None:
    counter = TokenCounter(MODEL)
    messages = conversation()
    total = sum(counter.count_message(m) for m in messages) + REPLY_PRIMING
    assert total == litellm.token_counter(model=MODEL, messages=messages)


def test_tool_schemas_count_as_litellm_counts_them(litellm: Any) -> None:
    counter = TokenCounter(MODEL)
    messages = conversation()
    meter = ContextMeter(100_000, counter)
    used = meter.measure(messages, TOOLS)
    assert used == litellm.token_counter(model=MODEL, messages=messages, tools=TOOLS)
    assert counter.count_tools(TOOLS) > 10


def test_counting_is_incremental(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    counter = TokenCounter(MODEL)
    counted: list[dict[str, Any]] = []
    original = counter.count_message
    monkeypatch.setattr(counter, "count_message", lambda m: counted.append(m) or original(m))
    meter = ContextMeter(100_000, counter)
    messages = conversation()
    meter.measure(messages, TOOLS)
    assert len(counted) == len(messages)
    messages.append({"role": "user", "content": "thanks"})
    meter.measure(messages, TOOLS)
    meter.measure(messages, TOOLS)
    assert len(counted) == len(messages)  # only the new message was counted, once
    # A compaction replaces the history: the meter notices and counts the new one afresh.
    replaced = [messages[0], {"role": "user", "content": "snapshot"}]
    used = meter.measure(replaced, TOOLS)
    assert counted[-1] is replaced[1]
    assert used == litellm.token_counter(model=MODEL, messages=replaced, tools=TOOLS)


def test_provider_usage_is_the_truth_and_new_messages_are_estimated_on_top(litellm: Any) -> None:
    meter = ContextMeter(10_000, TokenCounter(MODEL))
    messages = conversation()
    event = meter.after_response(Usage(prompt_tokens=900, completion_tokens=40), messages)
    assert (event.used, event.estimated) == (940, False)
    result = {"role": "tool", "tool_call_id": "c2", "name": "read_file", "content": "x = 1\n" * 50}
    messages.append(result)
    event = meter.after_message(messages)
    added = litellm.token_counter(model=MODEL, messages=[result]) - REPLY_PRIMING
    assert event.used == 940 + added and event.estimated
    assert event.window == usable_window(10_000) and event.fraction == round(event.used / event.window, 4)


def test_without_usage_the_whole_history_is_counted(litellm: Any) -> None:
    meter = ContextMeter(10_000, TokenCounter(MODEL))
    messages = conversation()
    meter.measure(messages, TOOLS)
    event = meter.after_response(None, messages)
    assert event.used == litellm.token_counter(model=MODEL, messages=messages, tools=TOOLS) and event.estimated


def test_tokenizer_failure_falls_back_to_four_characters_a_token(litellm: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**kwargs: Any) -> int:
        raise ValueError("no tokenizer")

    monkeypatch.setattr(litellm, "token_counter", broken)
    counter = TokenCounter(MODEL)
    message = {"role": "user", "content": "y" * 400}
    assert counter.count_message(message) == 100 + 4
    assert counter.count_text("z" * 41) == estimate_tokens("z" * 41) == 11
    assert not counter.use_litellm


def test_usable_window_reserves_room_for_the_reply() -> None:
    assert usable_window(200_000) == 184_000  # capped at 16k
    assert usable_window(8_000) == 7_200  # 10% of a small window
    meter = ContextMeter(lambda: None)  # unknown model: a default, not zero
    assert meter.window == 128_000 and meter.usable == 128_000 - 12_800


async def test_the_gauge_moves_after_every_model_call_and_tool_result(server: ScriptedOpenAIServer,
                                                                      tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "echo", "arguments": {"text": "a" * 400}}]},
               {"text": "done", "usage": {"prompt_tokens": 700, "completion_tokens": 5}})
    agent = make_agent(server, tmp_path, EchoTool())
    events = await run(agent, "go")
    kinds = [type(e) for e in events if isinstance(e, (ContextUsage, ToolResultEvent))]
    # after call 1, after the tool result (estimated), after call 2
    assert kinds == [ContextUsage, ToolResultEvent, ContextUsage, ContextUsage]
    usages = [e for e in events if isinstance(e, ContextUsage)]
    assert not usages[0].estimated and usages[1].estimated and not usages[2].estimated
    assert usages[1].used > usages[0].used
    assert usages[2].used == 705
    assert usages[2].window == usable_window(agent.context.window)


def test_litellm_model_counts_with_litellms_tokenizer(tmp_path: Path) -> None:
    from anvil.core.loop.agent import Agent

    model = LiteLLMModel(MODEL, api_base="http://127.0.0.1:9", context_window_override=5000)
    agent = Agent(model, ToolRegistry([]), ToolContext(root=tmp_path, data_dir=tmp_path), system_prompt="s")
    assert agent.context.counter.use_litellm and agent.context.window == 5000

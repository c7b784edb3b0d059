"""Claude through litellm's real Anthropic code, against the local Messages API server: extended thinking kept
and sent back, prompt caching over the whole conversation, cost at litellm's prices for each kind of token."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from anvil.core.events import AssistantMessage, ReasoningDelta, Retrying, TurnEnded, UsageReport
from anvil.core.model.litellm_model import LiteLLMModel, load_litellm
from anvil.core.model.protocol import Completion, Reasoning
from tests.conftest import anvil_command
from tests.support.agents import CLAUDE, EchoTool, make_claude_agent, run
from tests.support.anthropic_rules import sign
from tests.support.anthropic_server import ScriptedAnthropicServer

ECHO = {"name": "echo", "arguments": {"text": "hi"}}


@pytest.fixture
def claude() -> Iterator[ScriptedAnthropicServer]:
    with ScriptedAnthropicServer() as server:
        yield server


def breakpoints(request: dict[str, Any]) -> list[str]:
    """Where a request's cache_control marks are: tools, system, or the role of the message."""
    marks = [f"tool:{t['name']}" for t in request.get("tools", []) if "cache_control" in t]
    system = request.get("system")
    marks += ["system" for b in (system if isinstance(system, list) else []) if "cache_control" in b]
    for index, message in enumerate(request["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        marks += [f"{index}:{b['type']}" for b in content if "cache_control" in b]
    return marks


async def test_thinking_streams_and_goes_back_signed_on_every_tool_use_turn(claude: ScriptedAnthropicServer,
                                                                             tmp_path: Path) -> None:
    claude.add({"thinking": "The person wants an echo.", "text": "Echoing.", "tool_calls": [ECHO]},
               {"thinking": "Once more, to be sure.", "tool_calls": [ECHO]},
               {"thinking": "Both echoes came back.", "text": "Done: hi."})
    agent = make_claude_agent(claude, tmp_path, EchoTool(), reasoning="high")
    events = await run(agent)

    assert claude.errors == []  # the API accepted every request
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    streamed = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert streamed == "The person wants an echo.Once more, to be sure.Both echoes came back."
    replies = [e for e in events if isinstance(e, AssistantMessage)]
    assert [r.reasoning for r in replies] == ["The person wants an echo.", "Once more, to be sure.",
                                              "Both echoes came back."]
    # the reply is kept with its signed thinking, and sent back first in its message
    kept = agent.messages[2]
    assert kept["thinking_blocks"] == [{"type": "thinking", "thinking": "The person wants an echo.",
                                        "signature": sign("The person wants an echo.")}]
    second = claude.requests[1]
    assert second["thinking"]["type"] == "enabled"
    assert [b["type"] for b in second["messages"][1]["content"]] == ["thinking", "text", "tool_use"]
    third = claude.requests[2]["messages"]
    assert third[3]["content"][0] == {"type": "thinking", "thinking": "Once more, to be sure.",
                                      "signature": sign("Once more, to be sure.")}


async def test_the_server_rejects_what_the_api_rejects(claude: ScriptedAnthropicServer) -> None:
    """The fixture's checks hold anvil to the real API: a tool-use turn without its thinking, a forged signature,
    more than four cache breakpoints."""
    litellm = load_litellm()
    tool = {"type": "function", "function": {"name": "echo", "parameters": {"type": "object", "properties": {}}}}
    call = {"role": "assistant", "content": "Echoing.",
            "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "toolu_1", "content": "echo: hi"}

    async def ask(messages: list[dict[str, Any]], **extra: Any) -> str:
        claude.add({"text": "fine"})
        try:
            response = await litellm.acompletion(model=CLAUDE, api_base=claude.url, api_key="k", messages=messages,
                                                 tools=[tool], stream=True, max_retries=0,
**extra)
            async for _ in response:
                pass
        except Exception as exc:
            return str(exc)
        return "accepted"

    user = {"role": "user", "content": "go"}
    assert "Expected `thinking` or `redacted_thinking`" in await ask([user, call, result], reasoning_effort="low")
    forged = {**call, "thinking_blocks": [{"type": "thinking", "thinking": "x", "signature": sign("y")}]}
    assert "Invalid `signature`" in await ask([user, forged, result], reasoning_effort="low")
    signed = {**call, "thinking_blocks": [{"type": "thinking", "thinking": "x", "signature": sign("x")}]}
    assert await ask([user, signed, result], reasoning_effort="low") == "accepted"
    assert "cannot contain `thinking`" in await ask([user, signed, result])  # thinking off in that loop
    # Five breakpoints, sent as the API's own request: litellm (1.108 on) drops the ones past four itself.
    marked = [{"role": r, "content": [{"type": "text", "text": c, "cache_control": {"type": "ephemeral"}}]}
              for r, c in [("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d"), ("user", "e")]]
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{claude.url}/v1/messages", headers={"x-api-key": "k"},
                                     json={"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": marked})
    assert response.status_code == 400 and "A maximum of 4 blocks with cache_control" in response.text


async def test_a_loop_that_began_without_thinking_goes_on_without_it(claude: ScriptedAnthropicServer) -> None:
    """Thinking turned on mid-loop (or a resumed session from another model): the request inside that loop goes
    without thinking; turned off mid-loop, the loop's thinking blocks stay home. Neither is an API error."""
    call = {"role": "assistant", "content": "Echoing.",
            "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "echo", "arguments": "{}"}}]}
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}, call,
               {"role": "tool", "tool_call_id": "toolu_1", "content": "echo: hi"}]
    claude.add({"thinking": "hmm", "text": "One."}, {"text": "Two."})
    model = LiteLLMModel(CLAUDE, api_base=claude.url, api_key="k", reasoning=Reasoning("high"))
    items = [item async for item in model.stream(history, [])]
    assert isinstance(items[-1], Completion) and items[-1].text == "One."
    assert "thinking" not in claude.requests[0]

    signed = {**call, "thinking_blocks": [{"type": "thinking", "thinking": "x", "signature": sign("x")}]}
    model.reasoning = Reasoning("off")
    items = [item async for item in model.stream([*history[:2], signed, history[3]], [])]
    assert isinstance(items[-1], Completion) and items[-1].text == "Two."
    assert claude.errors == []
    assert [b["type"] for b in claude.requests[1]["messages"][1]["content"]] == ["text", "tool_use"]


async def test_every_step_reads_the_previous_steps_prompt_from_cache(claude: ScriptedAnthropicServer,
                                                                      tmp_path: Path) -> None:
    steps = 6
    claude.add(*[{"text": f"Step {n}.", "tool_calls": [{"name": "echo", "arguments": {"text": f"{n}" * 400}}]}
                 for n in range(steps - 1)], {"text": "All done."})
    agent = make_claude_agent(claude, tmp_path, EchoTool(), system_prompt="You are a careful assistant. " * 200)
    events = await run(agent)

    assert claude.errors == [] and len(claude.requests) == steps
    for request in claude.requests:
        marks = breakpoints(request)
        assert len(marks) <= 4 and marks[:2] == ["tool:echo", "system"]
    final = claude.requests[-1]
    end = len(final["messages"]) - 1
    assert breakpoints(final)[2:] == [f"{end - 2}:tool_result", f"{end}:tool_result"]  # the previous end, and this
    usages = [s.usage for s in claude.served]
    assert all(u is not None for u in usages)
    totals = [u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in usages]
    for step in range(1, steps):  # each step reads all of the previous step's prompt and writes only what is new
        assert usages[step]["cache_read_input_tokens"] == totals[step - 1]
        assert usages[step]["input_tokens"] == 0
    read = sum(u["cache_read_input_tokens"] for u in usages[1:])
    assert read / sum(totals[1:]) > 0.85
    # what anvil recorded is what the API reported
    reports = [e for e in events if isinstance(e, UsageReport)]
    assert [r.cache_read_tokens for r in reports] == [u["cache_read_input_tokens"] for u in usages]
    assert [r.cache_write_tokens for r in reports] == [u["cache_creation_input_tokens"] for u in usages]
    assert [r.prompt_tokens for r in reports] == totals


async def test_the_cost_is_litellms_price_for_each_kind_of_token(claude: ScriptedAnthropicServer,
                                                                  tmp_path: Path) -> None:
    claude.add({"text": "Echoing.", "tool_calls": [{"name": "echo", "arguments": {"text": "y" * 300}}]},
               {"thinking": "Done thinking.", "text": "Done."})
    agent = make_claude_agent(claude, tmp_path, EchoTool(), reasoning="low",
                              system_prompt="Be brief and exact. " * 300)
    events = await run(agent)

    price = load_litellm().model_cost["claude-sonnet-4-5"]
    expected = 0.0
    for served in claude.served:
        usage = served.usage
        assert usage is not None
        expected += (usage["input_tokens"] * price["input_cost_per_token"]
                     + usage["cache_read_input_tokens"] * price["cache_read_input_token_cost"]
                     + usage["cache_creation_input_tokens"] * price["cache_creation_input_token_cost"]
                     + usage["output_tokens"] * price["output_cost_per_token"])
    assert sum(s.usage["cache_read_input_tokens"] for s in claude.served if s.usage) > 0  # caching did happen
    last = [e for e in events if isinstance(e, UsageReport)][-1]
    assert last.total_cost == pytest.approx(expected, abs=1e-6)  # totals are kept to a millionth of a dollar
    without_cache_prices = sum((s.usage["input_tokens"] + s.usage["cache_read_input_tokens"]
                                + s.usage["cache_creation_input_tokens"]) * price["input_cost_per_token"]
                               + s.usage["output_tokens"] * price["output_cost_per_token"]
                               for s in claude.served if s.usage)
    assert last.total_cost != pytest.approx(without_cache_prices, rel=1e-3)  # cache tokens are not base-priced


async def test_an_overloaded_api_is_retried_and_an_error_event_ends_the_turn(claude: ScriptedAnthropicServer,
                                                                             tmp_path: Path) -> None:
    claude.add({"status": 529, "error_type": "overloaded_error", "error": "Overloaded"}, {"text": "Back."})
    agent = make_claude_agent(claude, tmp_path)
    events = await run(agent)
    assert any(isinstance(e, Retrying) for e in events)
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"

    claude.add({"stream_error": "overloaded_error", "text": "Half an answer"})
    events = await run(agent)
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "error"
    assert "overloaded" in events[-1].message.lower()


def test_resumed_thinking_goes_back_after_continue(claude: ScriptedAnthropicServer, project: Path) -> None:
    """`anvil -p` with thinking on, then `anvil -c -p`: the first run's signed thinking is in the session and goes
    back with its message, and the resumed run calls tools with thinking on without an API error."""
    claude.add({"thinking": "Look first.", "text": "Echo.", "tool_calls": [
                   {"name": "list_files", "arguments": {"path": "."}}]},
               {"thinking": "I saw the files.", "text": "There is a README."},
               {"thinking": "Again.", "tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]},
               {"thinking": "Same files.", "text": "Still a README."})
    env = {**os.environ, "ANVIL_REASONING": "medium", "ANTHROPIC_API_KEY": "test-key"}
    base = ["--model", CLAUDE, "--api-base", claude.url, "--output-format", "json"]
    first = subprocess.run(anvil_command("-p", "what is here?", *base), cwd=project, capture_output=True,
                           text=True, timeout=120, env=env)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(anvil_command("-c", "-p", "and now?", *base), cwd=project, capture_output=True,
                            text=True, timeout=120, env=env)
    assert second.returncode == 0, second.stderr
    assert claude.errors == []
    resumed = claude.requests[2]["messages"]
    assert resumed[1]["content"][0] == {"type": "thinking", "thinking": "Look first.",
                                        "signature": sign("Look first.")}
    result = json.loads(second.stdout)
    assert result["result"] == "Still a README." and result["usage"]["cache_read_tokens"] >= 0


async def test_a_compacted_conversation_keeps_each_reply_with_its_thinking(claude: ScriptedAnthropicServer,
                                                                           tmp_path: Path) -> None:
    long = {**ECHO, "arguments": {"text": "a long line to echo. " * 300}}  # an older part worth summarising
    claude.add({"thinking": "Echo first.", "text": "Echoing.", "tool_calls": [long]},
               {"thinking": "That worked.", "text": "Echoed once."},
               {"thinking": "Again, then.", "tool_calls": [{**ECHO, "arguments": {"text": "2"}}]},
               {"thinking": "Twice now.", "text": "Echoed twice."})
    agent = make_claude_agent(claude, tmp_path, EchoTool(), reasoning="high")
    await run(agent, "echo once")
    await run(agent, "echo again")
    claude.add({"text": "The person asked for two echoes; both came back."})  # the snapshot's summary call
    finished = [e async for e in agent.compact()][-2]
    assert getattr(finished, "tier", None) == 2

    kept = [m for m in agent.messages if m.get("role") == "assistant"]
    assert kept and all(m["thinking_blocks"][0]["signature"] == sign(m["thinking_blocks"][0]["thinking"])
                        for m in kept)  # every reply the snapshot kept still carries its own signed thinking
    claude.add({"thinking": "A third.", "tool_calls": [{**ECHO, "arguments": {"text": "3"}}]},
               {"thinking": "Three.", "text": "Echoed three times."})
    events = await run(agent, "once more")
    assert claude.errors == [] and isinstance(events[-1], TurnEnded) and events[-1].reason == "done"

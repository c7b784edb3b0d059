"""OpenAI-compatible streams read lean (the SDK's SSE events as dicts) give what litellm's wrapper gives."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest

from anvil.core.model import lean_stream, litellm_model
from anvil.core.model.errors import ModelError, RetryPolicy
from anvil.core.model.litellm_model import LiteLLMModel
from anvil.core.model.protocol import Completion
from tests.support.openai_server import ScriptedOpenAIServer

TURN = {"reasoning": "Think first, then act.", "text": "Reading the file now.",
        "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py", "note": "x" * 300}},
                       {"name": "grep", "arguments": {"pattern": "def "}}],
        # reasoning tokens as the provider reports them (litellm estimates them when a provider does not; the
        # lean path takes the provider's word only, which changes no cost: they are part of completion_tokens)
        "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "reasoning_tokens": 7}}


async def _collect(model: LiteLLMModel) -> tuple[list[Any], Completion]:
    items = [item async for item in model.stream([{"role": "user", "content": "hi"}], [])]
    assert isinstance(items[-1], Completion)
    return items[:-1], items[-1]


def _model(server: ScriptedOpenAIServer) -> LiteLLMModel:
    # a real model name, so that litellm's prices apply to both paths
    return LiteLLMModel("openai/gpt-4o", api_base=server.url, retry=RetryPolicy(max_attempts=1))


async def test_the_lean_path_is_taken_and_matches_litellms_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[bool] = []
    real = lean_stream.lean_events

    def spy(response: Any) -> Any:
        events = real(response)
        taken.append(events is not None)
        return events

    monkeypatch.setattr(litellm_model, "lean_events", spy)
    with ScriptedOpenAIServer([TURN, TURN]) as server:
        lean_items, lean = await _collect(_model(server))
        monkeypatch.setattr(litellm_model, "lean_events", lambda response: None)
        wrapped_items, wrapped = await _collect(_model(server))
    assert taken == [True]
    assert lean_items == wrapped_items and lean_items  # the same deltas, reasoning included
    assert lean.text == wrapped.text == "Reading the file now."
    assert [(c.id, c.name, c.arguments) for c in lean.tool_calls] == \
        [(c.id, c.name, c.arguments) for c in wrapped.tool_calls]
    assert json.loads(lean.tool_calls[0].arguments) == {"path": "a.py", "note": "x" * 300}
    assert lean.usage == wrapped.usage and lean.usage is not None and lean.usage.prompt_tokens == 1200
    assert lean.cost == wrapped.cost and lean.cost is not None and lean.cost > 0
    assert lean.finish_reason == wrapped.finish_reason == "tool_calls"
    assert lean.reasoning == wrapped.reasoning


async def test_an_error_event_mid_stream_ends_the_call_with_its_message() -> None:
    turn = {"text": "Half an answer", "stream_error": "The server is overloaded."}
    with ScriptedOpenAIServer([turn]) as server, pytest.raises(ModelError) as caught:
        await _collect(_model(server))
    assert "The server is overloaded" in caught.value.message


async def test_a_read_that_times_out_mid_stream_is_a_timeout_not_a_crash() -> None:
    import httpx
    from openai import APITimeoutError

    async def events() -> AsyncIterator[Any]:
        yield SimpleNamespace(data='{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}')
        raise httpx.ReadTimeout("timed out")

    closed: list[bool] = []

    async def aclose() -> None:
        closed.append(True)

    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    stream = SimpleNamespace(_iter_events=events, response=SimpleNamespace(request=request, aclose=aclose))
    chunks = lean_stream._chunks(stream)
    assert (await chunks.__anext__())["choices"][0]["delta"]["content"] == "Hi"
    with pytest.raises(APITimeoutError):
        await chunks.__anext__()
    assert closed == [True]


def test_other_providers_and_unknown_streams_keep_litellms_wrapper() -> None:
    class AsyncStream:  # the right name, but not the OpenAI SDK's
        response = object()

        def _iter_events(self) -> None: ...

    assert lean_stream.lean_events(SimpleNamespace(custom_llm_provider="anthropic", completion_stream=None)) is None
    assert lean_stream.lean_events(SimpleNamespace(custom_llm_provider="openai", completion_stream=AsyncStream())) \
        is None

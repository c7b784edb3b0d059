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


class _Response:
    """The HTTP response under the SDK's stream, as the lean reader uses it: bytes in pieces, then ``failure``."""

    def __init__(self, pieces: list[bytes], failure: BaseException | None = None) -> None:
        self.pieces, self.failure, self.read, self.closed = pieces, failure, 0, False
        self.request = SimpleNamespace(method="POST", url="http://127.0.0.1/v1/chat/completions")

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            self.read += 1
            yield piece
        if self.failure is not None:
            raise self.failure

    async def aclose(self) -> None:
        self.closed = True


def _event(delta: dict[str, Any], line_end: str = "\n") -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return f"data: {json.dumps(chunk)}{line_end}{line_end}".encode()


async def _read(response: _Response) -> tuple[list[list[dict[str, Any]]], BaseException | None]:
    batches: list[list[dict[str, Any]]] = []
    try:
        async for batch in lean_stream._batches(response):
            batches.append(batch)
    except Exception as exc:
        return batches, exc
    return batches, None


@pytest.mark.parametrize("library", ["httpx", "httpx2"])  # older SDKs read with httpx, newer with httpx2
@pytest.mark.parametrize(("failure", "raised"), [("ReadTimeout", "APITimeoutError"),
                                                 ("RemoteProtocolError", "APIConnectionError")])
async def test_a_read_that_times_out_or_breaks_mid_stream_is_the_sdks_error_not_a_crash(library: str, failure: str,
                                                                                         raised: str) -> None:
    http = pytest.importorskip(library)
    if library == "httpx2" and not hasattr(pytest.importorskip("openai._httpx2"), "request_exceptions"):
        pytest.skip("this openai SDK (2.x) reads with httpx: an httpx2 error cannot come from its reads")
    response = _Response([_event({"content": "Hi"})], getattr(http, failure)("the read failed"))
    batches, error = await _read(response)
    assert [[chunk["choices"][0]["delta"] for chunk in batch] for batch in batches] == [[{"content": "Hi"}]]
    assert type(error).__name__ == raised and type(error).__module__.startswith("openai")
    assert response.closed


async def test_done_ends_the_stream_and_what_follows_is_not_read() -> None:
    response = _Response([_event({"content": "a"}) + b"data: [DONE]\n\n" + _event({"content": "after"}),
                          _event({"content": "never read"})])
    batches, error = await _read(response)
    assert error is None and response.closed and response.read == 1
    assert [[chunk["choices"][0]["delta"]["content"] for chunk in batch] for batch in batches] == [["a"]]


async def test_an_error_event_comes_after_the_chunks_before_it_with_the_sdks_message() -> None:
    from openai import APIError

    error_event = b'data: {"error": {"message": "The server is overloaded.", "type": "server_error"}}\n\n'
    response = _Response([_event({"content": "Half"}) + error_event + _event({"content": "never"})])
    batches, error = await _read(response)
    assert [[chunk["choices"][0]["delta"]["content"] for chunk in batch] for batch in batches] == [["Half"]]
    assert isinstance(error, APIError) and error.message == "The server is overloaded."
    assert error.body == {"message": "The server is overloaded.", "type": "server_error"}
    batches, error = await _read(_Response([b'data: {"error": {"code": 500}}\n\n']))  # no message: the SDK's words
    assert isinstance(error, APIError) and error.message == "An error occurred during streaming" and not batches


async def test_keep_alives_crlf_split_events_and_the_usage_chunk_come_through_as_sent() -> None:
    usage = b'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}\r\n\r\n'
    stream = (b": keep-alive\r\n\r\n" + _event({"content": "one"}, "\r\n") + b"event: message\r\n"
              + _event({"content": "two"}, "\r\n") + usage + b"data: [DONE]\r\n\r\n")
    whole = await _read(_Response([stream]))
    for cut in range(1, len(stream)):  # every place a read can end, CR and LF apart included
        batches, error = await _read(_Response([stream[:cut], stream[cut:]]))
        assert error is None
        assert [chunk for batch in batches for chunk in batch] == [chunk for batch in whole[0] for chunk in batch]
    chunks = [chunk for batch in whole[0] for chunk in batch]
    assert [c["choices"][0]["delta"]["content"] for c in chunks[:2]] == ["one", "two"]
    assert chunks[2]["usage"] == {"prompt_tokens": 5, "completion_tokens": 2}


async def test_json_that_does_not_parse_is_the_standard_librarys_error_and_what_jiter_refuses_json_takes() -> None:
    batches, error = await _read(_Response([_event({"content": "ok"}) + b"data: {\"choices\": [\n\n"]))
    assert isinstance(error, json.JSONDecodeError) and len(batches) == 1
    lone_surrogate = b'data: {"choices": [{"index": 0, "delta": {"content": "\\ud800"}}]}\n\n'
    batches, error = await _read(_Response([lone_surrogate]))
    assert error is None and batches[0][0]["choices"][0]["delta"]["content"] == "\ud800"


def test_other_providers_and_unknown_streams_keep_litellms_wrapper() -> None:
    class AsyncStream:  # the right name, but not the OpenAI SDK's
        response = _Response([])

    assert lean_stream.lean_events(SimpleNamespace(custom_llm_provider="anthropic", completion_stream=None)) is None
    assert lean_stream.lean_events(SimpleNamespace(custom_llm_provider="openai", completion_stream=AsyncStream())) \
        is None

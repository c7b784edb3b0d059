"""A connection that drops in the middle of a streamed reply, through litellm's real paths against both scripted
servers (OpenAI's chat completions and Anthropic's Messages API): before anything was shown it is retried like other
passing faults; after text, the turn ends keeping the text, and the model can go on from there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import ErrorEvent, Retrying, TextDelta
from anvil.core.loop.agent import Agent
from anvil.core.loop.history import DROPPED_MARK
from anvil.core.session.store import SessionStore, read_session
from anvil.frontend.prompt import CONTINUE_TEXT
from tests.support.agents import assert_history_valid, ended, make_agent, make_claude_agent, run
from tests.support.anthropic_server import ScriptedAnthropicServer
from tests.support.openai_server import ScriptedOpenAIServer

LONG = "The answer comes in several pieces, and this sentence is long enough to be streamed in many chunks."


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def agent_for(provider: str, turns: list[dict[str, Any]], tmp_path: Path) -> tuple[Agent, Any]:
    """An agent on a scripted server of ``provider`` (fast retries, three attempts), its session in a file."""
    server: Any = ScriptedOpenAIServer(turns) if provider == "openai" else ScriptedAnthropicServer(turns)
    server.start()
    session = SessionStore(tmp_path / "data", tmp_path).create("m", "v")
    build = make_agent if provider == "openai" else make_claude_agent
    agent = build(server, tmp_path, session=session)
    return agent, server


def requests(server: Any) -> list[dict[str, Any]]:
    return server.requests if isinstance(server, ScriptedOpenAIServer) else [s.request for s in server.served]


def sent_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # Anthropic's blocks
        return "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return str(content or "")


# the first events of a reply, before its text: OpenAI's role chunk; Anthropic's message_start, ping, block start
BEFORE_TEXT = {"openai": 1, "anthropic": 3}


async def test_a_drop_before_any_text_is_retried_like_other_passing_faults(provider: str, tmp_path: Path) -> None:
    agent, server = agent_for(provider, [{"text": LONG, "drop_after": BEFORE_TEXT[provider]}, {"text": "Whole."}],
                              tmp_path)
    try:
        events = await run(agent, "hi")
    finally:
        server.stop()
    retry = next(e for e in events if isinstance(e, Retrying))
    assert "dropped in the middle of its reply" in retry.message and "overloaded" not in retry.message
    assert "Could not connect" not in retry.message
    assert ended(events).reason == "done" and "".join(e.text for e in events if isinstance(e, TextDelta)) == "Whole."
    assert len(requests(server)) == 2


async def test_a_drop_after_text_ends_the_turn_keeping_the_text_and_the_model_goes_on(provider: str,
                                                                                      tmp_path: Path) -> None:
    agent, server = agent_for(provider, [{"text": LONG, "drop_after": BEFORE_TEXT[provider] + 3},
                                         {"text": "and the rest of it."}], tmp_path)
    try:
        events = await run(agent, "tell me")
        shown = "".join(e.text for e in events if isinstance(e, TextDelta))
        end = ended(events)
        assert shown and LONG.startswith(shown) and shown != LONG
        assert end.reason == "dropped" and not any(isinstance(e, ErrorEvent) for e in events)
        assert end.message.startswith("The connection to the provider at ")
        assert end.message.endswith("dropped in the middle of its reply; the text so far is kept.")
        assert len(requests(server)) == 1  # shown text cannot be taken back: not retried
        kept = agent.messages[-1]
        assert kept == {"role": "assistant", "content": f"{shown}\n\n{DROPPED_MARK}"}
        assert agent.history.cut_by_dropped_connection()
        assert_history_valid(agent.messages)
        # the session file has it too: `anvil -c` resumes with the text
        assert agent.session is not None
        state = read_session(agent.session.path)
        assert state.messages[-1] == kept
        assert json.loads(agent.session.path.read_text().splitlines()[-1])["event"]["reason"] == "dropped"

        events = await run(agent, CONTINUE_TEXT)  # what /continue sends
        assert ended(events).reason == "done"
        sent = requests(server)[-1]["messages"]
        assert shown in sent_text(sent[-2]) and DROPPED_MARK in sent_text(sent[-2])
        assert sent_text(sent[-1]) == CONTINUE_TEXT
        assert not agent.history.cut_by_dropped_connection()
    finally:
        server.stop()


async def test_drops_every_time_give_up_after_the_retries_with_the_same_words(tmp_path: Path) -> None:
    agent, server = agent_for("openai", [{"text": LONG, "drop_after": 1}] * 3, tmp_path)
    try:
        events = await run(agent, "hi")
    finally:
        server.stop()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.kind == "dropped" and error.retryable and "(gave up after 3 attempts)" in error.message
    assert ended(events).reason == "error"  # nothing was shown: nothing to go on with; the message is sent again
    assert not agent.history.cut_by_dropped_connection()

"""The session facade: what front ends may do with a session, over a real runtime and a scripted model."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.config import Settings
from anvil.core.events import TurnEnded
from anvil.core.model.scripted import ScriptedModel
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime


def facade(project: Path, turns: list[dict[str, object]], **settings: object) -> SessionFacade:
    return SessionFacade(open_runtime(Settings(model="scripted", **settings), project,  # type: ignore[arg-type]
                                      model=ScriptedModel(turns)))


async def test_a_turn_usage_and_the_conversation(project: Path) -> None:
    session = facade(project, [{"text": "Hello.", "cost": 0.25, "usage": {"prompt_tokens": 40,
                                                                          "completion_tokens": 3}}])
    events = [event async for event in session.submit("hi")]
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    usage = session.usage()
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cost) == (40, 3, 0.25) and usage.context_used > 0
    assert [m["role"] for m in session.messages] == ["user", "assistant"] and session.turns == 1
    session.messages.clear()  # a copy: the conversation is not the front end's to change
    assert len(session.messages) == 2
    assert (await session.measure()).used > 0
    await session.close()


async def test_modes_by_name(project: Path) -> None:
    session = facade(project, [])
    assert session.set_mode("Accept-Edits") == "accept_edits" and session.next_mode() == "auto"
    with pytest.raises(ValueError, match="unknown approval mode"):
        session.set_mode("sideways")
    assert session.mode == "auto"
    await session.close()


async def test_steering_and_what_is_left_of_it(project: Path) -> None:
    session = facade(project, [{"text": "ok"}])
    session.steer("also this")
    assert session.pending_steering == ("also this",)
    assert session.take_steering() == ["also this"] and session.pending_steering == ()
    await session.close()


async def test_requests_go_to_the_front_end_only_when_the_engine_does_not_route_them(project: Path) -> None:
    headless = SessionFacade(open_runtime(Settings(model="scripted"), project, model=ScriptedModel([]),
                                          interactive=False))
    asked: list[object] = []

    async def ask(event: object) -> None:
        asked.append(event)

    headless.answer_requests_with(ask)
    assert headless.runtime.agent.ctx.ask is ask
    interactive = facade(project, [])
    interactive.answer_requests_with(ask)
    assert interactive.runtime.agent.ctx.ask is not ask  # the turn's own events carry its requests
    await headless.close()
    await interactive.close()


async def test_sessions_new_and_resumed_keep_the_mode(project: Path) -> None:
    session = facade(project, [{"text": "ok"}])
    [event async for event in session.submit("first")]
    session.set_mode("plan")
    new = await session.open_new()
    assert new.id != session.id and new.mode == "plan" and new.model is session.model
    assert session.id in [s.id for s in await new.sessions()]
    await session.close()
    again = await new.open_resumed(session.id)
    assert again.resumed_messages is not None and again.resumed_messages[0]["content"] == "first"
    assert again.mode == "plan"
    await new.close()
    await again.close()


async def test_without_mcp_servers(project: Path) -> None:
    session = facade(project, [])
    assert session.mcp_status() == [] and not session.mcp_configured
    assert await session.attach_resources("read @docs:readme") == ("read @docs:readme", [])
    await session.close()


async def test_closing_at_once_kills_what_commands_left_running_and_closes_the_session_file(project: Path) -> None:
    # What the app's signal backstop calls from its own thread when the orderly close ran out of time.
    import time

    from anvil.core.sandbox.lifetime import tagged_pids
    from anvil.core.session.store import read_session
    from anvil.core.tools.shell.processes import shell_session

    job = {"name": "run_command", "arguments": {"command": "sleep 30", "background": True}}
    session = facade(project, [{"text": "", "tool_calls": [job]}, {"text": "Started."}], auto_approve=True)
    [event async for event in session.submit("start it")]
    tags = shell_session(session.runtime.agent.ctx).tags
    assert tagged_pids(tags)  # the background command runs on until the session closes
    session.close_now()
    deadline = time.monotonic() + 3
    while tagged_pids(tags) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not tagged_pids(tags)
    assert read_session(session.runtime.session.path).turns == 1 and session.runtime.session._fd is None

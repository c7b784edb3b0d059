"""A bug in any handler the loop calls ends as a tool error or an `error` event with one line, never an exception
out of the turn, and the session resumes: each kind of handler gets an injected exception."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import ErrorEvent, Event, ToolResultEvent, TurnEnded
from anvil.core.loop.agent import Agent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.checkpoints import NullCheckpointStore
from anvil.core.session.store import SessionStore, repair_history
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolRegistry, ToolResult
from tests.support.agents import assert_history_valid, run


class Broken(Exception):
    pass


class Args(ToolArgs):
    text: str = ""


class FlakyTool(Tool):
    """A tool whose ``where`` handler raises: run, phase (its label), preview (the approval diff), command."""

    name = "flaky"
    description = "Fails where it is told to."
    Args = Args
    approval = "rule"  # asks: preview and command are consulted

    def __init__(self, where: str) -> None:
        self.where = where

    def _maybe(self, where: str) -> None:
        if self.where == where:
            raise Broken(f"injected into {where}\nsecond line of the message")

    def phase(self, args: Any) -> str:
        self._maybe("phase")
        return "Flaking"

    def preview(self, args: Any, ctx: ToolContext) -> str | None:
        self._maybe("preview")
        return None

    def command(self, args: Any) -> str | None:
        self._maybe("command")
        return None

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        self._maybe("run")
        return ToolResult("flaky ran")


class BrokenFinish(NullCheckpointStore):
    def finish_turn(self, turn: int | None = None) -> None:
        raise Broken("injected into the checkpoints at the end of the turn")


class BrokenModel(ScriptedModel):
    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        raise Broken("injected into the model adapter")
        yield  # an async generator that fails on its first step


CALL = {"text": "trying", "tool_calls": [{"name": "flaky", "arguments": {"text": "x"}}]}


def build(tmp_path: Path, tool: Tool, model: ScriptedModel, checkpoints: Any = None,
          history: list[dict[str, Any]] | None = None) -> tuple[Agent, Any]:
    store = SessionStore(tmp_path / "data", tmp_path)
    session = store.create("scripted", "test")
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data", checkpoints=checkpoints or NullCheckpointStore())
    agent = Agent(model, ToolRegistry([tool]), ctx, system_prompt="test", session=session, history=history)
    return agent, session


async def turn_with_approval(agent: Agent) -> list[Event]:
    from anvil.core.events import ApprovalDecision

    return await run(agent, "go", answer=ApprovalDecision(True, by="user"))


def one_line(text: str) -> None:
    assert "\n" not in text and "Traceback" not in text, text


async def resumes(tmp_path: Path, session: Any) -> None:
    """The session, read back as `anvil -c` does, is valid to send and a new turn on it completes."""
    session.close()
    history = repair_history(session.load().messages)
    assert_history_valid(history)
    model = ScriptedModel([{"text": "back again"}])
    agent, _ = build(tmp_path / "resumed", EchoFree(), model, history=history)
    events = await run(agent, "go on")
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert model.calls[0][-1]["content"] == "go on"


class EchoFree(Tool):
    name = "noop"
    description = "Does nothing."
    Args = Args

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


@pytest.mark.parametrize("where", ["run", "phase", "preview", "command"])
async def test_a_bug_in_a_tool_handler_is_a_tool_error_and_the_turn_goes_on(tmp_path: Path, where: str) -> None:
    model = ScriptedModel([CALL, {"text": "I saw the error."}])
    agent, session = build(tmp_path, FlakyTool(where), model)
    events = await turn_with_approval(agent)  # preview and command: the exception escaped run_turn before
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert len(results) == 1
    if where == "phase":  # a label that fails falls back to the tool's name; the call itself runs
        assert results[0].ok and results[0].output == "flaky ran"
    else:
        assert not results[0].ok and f"injected into {where}" in results[0].output
        one_line(results[0].output)
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "done"
    assert model.calls[1][-1]["role"] == "tool"  # the model read the error and answered
    await resumes(tmp_path, session)


@pytest.mark.parametrize("where", ["model", "checkpoints"])
async def test_a_bug_around_the_tools_ends_the_turn_with_one_error_line(tmp_path: Path, where: str) -> None:
    model: ScriptedModel = BrokenModel([]) if where == "model" else ScriptedModel([{"text": "done"}])
    checkpoints = BrokenFinish() if where == "checkpoints" else None
    agent, session = build(tmp_path, FlakyTool("nowhere"), model, checkpoints)
    events = await run(agent)  # raised Broken out of run_turn before
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "injected into" in errors[0].message
    one_line(errors[0].message)
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "error"
    if where == "checkpoints":  # the model adapter's own boundary names the error; the loop's logs it
        assert errors[0].kind == "internal" and "errors.log" in errors[0].message
        log = (tmp_path / "data" / "errors.log").read_text()
        assert "Traceback" in log and "Broken: injected into" in log  # the details are kept for a bug report
    await resumes(tmp_path, session)


async def test_a_bug_between_a_call_and_its_result_leaves_a_resumable_history(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The turn breaks after the model asked for a tool and before its result: the call gets a result."""
    model = ScriptedModel([CALL])
    agent, session = build(tmp_path, FlakyTool("nowhere"), model)

    def broken_observe(*args: Any, **kwargs: Any) -> None:
        raise Broken("injected into the loop guard")

    monkeypatch.setattr(agent.caller, "run", _raising_run)
    monkeypatch.setattr(agent.guard, "observe", broken_observe)
    events = await turn_with_approval(agent)
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "error"
    messages = [json.loads(line) for line in session.path.read_text().splitlines()]
    tool_results = [r["message"] for r in messages if r["t"] == "message" and r["message"]["role"] == "tool"]
    assert tool_results and tool_results[-1]["content"].startswith("Not run: anvil's turn failed")
    await resumes(tmp_path, session)


async def _raising_run(outcome: Any, stage: Any) -> Any:
    raise Broken("injected into the tool caller")
    yield

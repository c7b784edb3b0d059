"""Escalation in task runs: each threshold ends the turn blocked (or stuck where somebody can answer), a question
or a stated blocker ends it blocked where nobody can answer, and the blocker says what was tried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import TurnEnded
from anvil.core.job_events import BlockerRaised
from anvil.core.loop.escalation import Escalation, stated_blocker
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.interaction import HEADLESS_QUESTION, AskUser, questions_block
from tests.support.agents import EchoTool, assert_history_valid, ended, make_agent, run
from tests.support.openai_server import ScriptedOpenAIServer


class EditArgs(ToolArgs):
    path: str
    why: str


class BrokenEdit(Tool):
    """An edit that always fails, with the words it is given (so each failure can have its own error)."""

    name = "broken_edit"
    description = "Fails."
    Args = EditArgs
    kind = "edit"
    mutates = True

    def write_targets(self, args: EditArgs) -> list[str]:
        return [args.path]

    async def run(self, args: EditArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"Edit failed: {args.why}", ok=False)


class FailArgs(ToolArgs):
    why: str
    attempt: int = 0  # not in the output: the same error from different calls


class Fail(Tool):
    name = "fail"
    description = "Fails with the given words."
    Args = FailArgs

    async def run(self, args: FailArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"Failure: {args.why}", ok=False)


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args} for name, args in pairs]}


def fail(why: str, attempt: int = 0) -> tuple[str, dict[str, Any]]:
    return "fail", {"why": why, "attempt": attempt}


def edit(path: str, why: str) -> tuple[str, dict[str, Any]]:
    return "broken_edit", {"path": path, "why": why}


def task_agent(server: ScriptedOpenAIServer, tmp_path: Path, *, blocking: bool = True) -> Any:
    agent = make_agent(server, tmp_path, Fail(), BrokenEdit(), EchoTool(), AskUser(), interactive=False)
    agent.escalation = Escalation(blocking=blocking)
    questions_block(agent.ctx, blocking)
    return agent


def blocker_of(events: list[Any]) -> BlockerRaised:
    found = [e for e in events if isinstance(e, BlockerRaised)]
    assert len(found) == 1
    return found[0]


# -- the thresholds, counted ------------------------------------------------------------------------------

def test_the_same_error_three_times_in_a_turn_even_apart() -> None:
    escalation = Escalation()
    steps = [("fail", "alpha"), ("fail", "beta"), ("fail", "alpha"), ("fail", "gamma")]
    assert all(escalation.observe(name, {"why": why}, False, f"Failure: {why}") is None for name, why in steps)
    reason = escalation.observe("fail", {"why": "alpha"}, False, "Failure: alpha")
    assert reason is not None and reason.startswith("The same error came back 3 times this turn")


def test_the_same_file_failing_three_edits() -> None:
    escalation = Escalation()
    for why in ("no match", "ambiguous"):
        assert escalation.observe("broken_edit", {}, False, f"Edit failed: {why}", edits=True, paths=["app.py"]) is None
    assert escalation.observe("broken_edit", {}, False, "x", edits=True, paths=["other.py"]) is None
    reason = escalation.observe("broken_edit", {}, False, "Edit failed: stale", edits=True, paths=["app.py"])
    assert reason is not None and reason.startswith("Editing app.py failed 3 times this turn")
    # failures of tools that do not edit never count against a file
    other = Escalation()
    for why in ("a", "b", "c"):
        assert other.observe("fail", {}, False, why, edits=False, paths=["app.py"]) is None


def test_more_than_five_failures_in_a_turn_and_successes_do_not_count() -> None:
    escalation = Escalation()
    for n, why in enumerate(("one", "two", "three", "four", "five")):
        assert escalation.observe("echo", {}, True, "fine") is None
        assert escalation.observe("fail", {"n": n}, False, f"Failure: {why}") is None
    reason = escalation.observe("fail", {}, False, "Failure: six")
    assert reason is not None and reason.startswith("6 tool calls failed this turn")
    escalation.reset()
    assert escalation.observe("fail", {}, False, "Failure: six") is None


@pytest.mark.parametrize("text", [
    "I cannot proceed: requirement 2 and requirement 3 contradict each other. Which one wins?",
    "I can't continue without the API key for the payments service.",
    "I'm unable to complete the task because the staging server is unreachable.",
    "The requirements conflict, so I cannot implement both. Please decide.",
])
def test_a_stated_blocker(text: str) -> None:
    said = stated_blocker(text)
    assert said is not None and said in text


@pytest.mark.parametrize("text", [
    "Done: I fixed the bug and the tests pass.",
    "I could not reproduce it at first, then found the off-by-one and fixed it.",
    "The tests contradicted the docs, so I fixed the docs.",  # a reason, but nothing it cannot do
    "I cannot proceed with the old API, so I used the new one; all tests pass.",  # cannot, but no reason
])
def test_not_a_stated_blocker(text: str) -> None:
    assert stated_blocker(text) is None


# -- through the loop -------------------------------------------------------------------------------------

async def test_a_threshold_ends_a_headless_task_turn_blocked_with_what_was_tried(server: ScriptedOpenAIServer,
                                                                                 tmp_path: Path) -> None:
    server.add(calls(fail("alpha", 1), fail("beta")), calls(fail("alpha", 2), fail("gamma")),
               calls(fail("alpha", 3), ("echo", {"text": "never run"})), {"text": "unreachable"})
    agent = task_agent(server, tmp_path)
    events = await run(agent, "do the task")
    blocker = blocker_of(events)
    assert blocker.source == "escalation" and blocker.question.startswith("The same error came back 3 times")
    assert blocker.tried == tuple(f"fail: failed (Failure: {why})" for why in ("alpha", "beta", "alpha", "gamma",
                                                                                "alpha"))
    end = ended(events)
    assert end.reason == "blocked" and end.message == blocker.question
    assert len(server.requests) == 3  # stopped: the model was not called again
    assert agent.tools.get("echo").seen == []  # type: ignore[union-attr]  # the rest of the reply did not run
    assert_history_valid(agent.messages)


async def test_the_same_file_failing_three_edits_blocks(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(calls(edit("app.py", "no match near line ten")), calls(edit("app.py", "two matches found")),
               calls(edit("app.py", "file changed on disk")), {"text": "unreachable"})
    events = await run(task_agent(server, tmp_path), "do the task")
    assert blocker_of(events).question.startswith("Editing app.py failed 3 times")
    assert ended(events).reason == "blocked"


async def test_more_than_five_failures_block(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(calls(fail("one"), fail("two"), fail("three")), calls(fail("four"), fail("five")),
               calls(fail("six")), {"text": "unreachable"})
    events = await run(task_agent(server, tmp_path), "do the task")
    assert blocker_of(events).question.startswith("6 tool calls failed this turn")


async def test_where_somebody_can_answer_a_threshold_stops_the_turn_instead(server: ScriptedOpenAIServer,
                                                                           tmp_path: Path) -> None:
    server.add(calls(fail("one"), fail("two"), fail("three")), calls(fail("four"), fail("five")),
               calls(fail("six")), {"text": "unreachable"})
    events = await run(task_agent(server, tmp_path, blocking=False), "do the task")
    end = ended(events)
    assert end.reason == "stuck" and end.message.startswith("6 tool calls failed this turn")
    assert not any(isinstance(e, BlockerRaised) for e in events)


async def test_without_a_task_run_the_thresholds_do_not_apply(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    server.add(calls(fail("one"), fail("two"), fail("three")), calls(fail("four"), fail("five")),
               calls(fail("six")), {"text": "Gave up on those."})
    agent = make_agent(server, tmp_path, Fail(), interactive=False)
    assert ended(await run(agent, "go")).reason == "done"


async def test_a_question_in_a_headless_task_run_is_a_blocker(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    question = {"question": "Keep the capitals or lowercase?", "options": ["capitals", "lowercase"]}
    server.add({"text": "Two rules clash.", "tool_calls": [{"name": "ask_user", "arguments": question},
                                                           {"name": "echo", "arguments": {"text": "no"}}]},
               {"text": "unreachable"})
    agent = task_agent(server, tmp_path)
    events = await run(agent, "do the task")
    blocker = blocker_of(events)
    assert blocker.source == "ask_user" and blocker.context == "Two rules clash."
    assert blocker.question == "Keep the capitals or lowercase? (options: capitals; lowercase)"
    end = ended(events)
    assert end.reason == "blocked" and len(server.requests) == 1
    assert agent.tools.get("echo").seen == []  # type: ignore[union-attr]
    tool_results = [m for m in agent.messages if m["role"] == "tool"]
    assert tool_results[0]["content"].startswith("Recorded as a blocker")
    assert_history_valid(agent.messages)


async def test_a_question_outside_a_task_run_still_tells_the_model_to_decide(server: ScriptedOpenAIServer,
                                                                             tmp_path: Path) -> None:
    server.add({"tool_calls": [{"name": "ask_user", "arguments": {"question": "Which?"}}]}, {"text": "Chose A."})
    agent = make_agent(server, tmp_path, AskUser(), interactive=False)
    events = await run(agent, "go")
    assert ended(events).reason == "done"
    assert HEADLESS_QUESTION in server.requests[1]["messages"][-1]["content"]


async def test_a_stated_blocker_ends_a_headless_task_run_blocked(server: ScriptedOpenAIServer,
                                                                 tmp_path: Path) -> None:
    text = "I cannot proceed: the two requirements contradict each other. Which should win?"
    server.add({"text": text})
    events = await run(task_agent(server, tmp_path), "do the task")
    blocker = blocker_of(events)
    assert blocker.source == "stated" and "contradict" in blocker.question and blocker.context == text
    assert ended(events).reason == "blocked"


async def test_a_turn_ended_blocked_is_recorded_in_the_session(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    from anvil.core.session.store import SessionStore

    store = SessionStore(tmp_path / "data", tmp_path)
    session = store.create("openai/scripted", "test")
    server.add({"text": "I can't continue without the database password."})
    agent = make_agent(server, tmp_path, session=session, interactive=False)
    agent.escalation = Escalation()
    events = await run(agent, "go")
    assert isinstance(events[-1], TurnEnded) and events[-1].reason == "blocked"
    session.close()
    kinds = [r.get("event", {}).get("type") for r in map(_json, session.path.read_text().splitlines())]
    assert "blocker" in kinds and "turn_ended" in kinds


def _json(line: str) -> dict[str, Any]:
    import json

    return json.loads(line)

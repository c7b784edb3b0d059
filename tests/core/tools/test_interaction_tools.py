"""ask_user and exit_plan_mode: answered through ctx.ask, and what they do when nobody can answer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.core.events import Event, Notice, PlanDecision, PlanProposed, QuestionAsked, ToolResultEvent
from anvil.core.loop.agent import Agent
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.errors import ToolError
from anvil.core.tools.files.file_tools import WriteFileTool
from anvil.core.tools.interaction import (
    HEADLESS_QUESTION,
    INTERACTION_TOOLS,
    PLAN_MODE_REMINDER,
    AskUser,
    ExitPlanMode,
    attach_policy,
    mode_reminder,
)

PLAN = "1. Add a parser test\n2. Fix `parse()`\n3. Run pytest"


class FakeFrontEnd:
    """Stands in for the loop plus a front end: shows the request (records it) and answers its future."""

    def __init__(self, reply: Callable[[Event], Any]) -> None:
        self.reply = reply
        self.asked: list[Event] = []

    async def __call__(self, event: Event) -> Any:
        self.asked.append(event)
        assert event.future is not None and not event.future.done()  # type: ignore[attr-defined]
        event.answer(self.reply(event))  # type: ignore[attr-defined]
        return await event.future  # type: ignore[attr-defined]


@pytest.fixture
def ctx(project: Path, tmp_path: Path) -> ToolContext:
    context = ToolContext(root=project, data_dir=tmp_path / "data")
    context.state["call_id"] = "call_7"
    emitted: list[Event] = []
    context.emit = emitted.append
    context.state["emitted"] = emitted
    return context


def emitted(ctx: ToolContext) -> list[Event]:
    return ctx.state["emitted"]


def planning(previous: str = "ask") -> ApprovalPolicy:
    policy = ApprovalPolicy()
    policy.set_mode(previous)  # type: ignore[arg-type]
    policy.set_mode("plan")
    return policy


def test_the_tools_are_exported_read_only_and_never_need_approval(ctx):
    assert [t.name for t in INTERACTION_TOOLS] == ["ask_user", "exit_plan_mode"]
    for tool in INTERACTION_TOOLS:
        assert not tool.mutates and tool.approval == "none"
        assert tool.schema()["function"]["name"] == tool.name
    params = AskUser().schema()["function"]["parameters"]
    assert params["required"] == ["question"] and "options" in params["properties"]


# -- ask_user ------------------------------------------------------------------------------------------


async def test_ask_user_shows_the_question_with_its_options_and_returns_the_answer(ctx):
    front = FakeFrontEnd(lambda event: "Option B, please")
    ctx.ask = front
    args = AskUser.Args(question="  Which parser? ", options=["A", " B ", "", "A"])
    result = await AskUser().run(args, ctx)
    [event] = front.asked
    assert isinstance(event, QuestionAsked)
    assert (event.call_id, event.question, event.options) == ("call_7", "Which parser?", ("A", "B"))
    assert result.ok and result.output == "The person answered: Option B, please"
    assert result.data == {"answer": "Option B, please"}


async def test_ask_user_without_options_and_an_empty_answer(ctx):
    front = FakeFrontEnd(lambda event: "   ")
    ctx.ask = front
    result = await AskUser().run(AskUser.Args(question="Anything else?"), ctx)
    assert front.asked[0].options == ()  # type: ignore[attr-defined]
    assert "gave no answer" in result.output and "state your assumption" in result.output


async def test_ask_user_headless_tells_the_model_to_decide(ctx):
    assert ctx.ask is None
    result = await AskUser().run(AskUser.Args(question="Tabs or spaces?"), ctx)
    assert result.ok and result.output == HEADLESS_QUESTION
    assert "headless" in result.output and "state your assumption" in result.output


async def test_ask_user_refuses_an_empty_question(ctx):
    with pytest.raises(ToolError, match="question is empty"):
        await AskUser().run(AskUser.Args(question="  "), ctx)


# -- exit_plan_mode ------------------------------------------------------------------------------------


async def test_approval_switches_back_to_the_previous_mode(ctx):
    policy = planning("accept_edits")
    attach_policy(ctx, policy)
    front = FakeFrontEnd(lambda event: PlanDecision(approved=True))
    ctx.ask = front
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    [event] = front.asked
    assert isinstance(event, PlanProposed) and event.plan == PLAN and event.call_id == "call_7"
    assert policy.mode == "accept_edits"
    assert result.output.startswith(f"The plan was approved:\n\n{PLAN}\n\nCarry on with it; keep the todo list "
                                    "(todo_write) in step.")
    assert "now accept_edits mode" in result.output
    assert result.data is not None and result.data["approved"] and not result.data["edited"]
    notes = [e.message for e in emitted(ctx) if isinstance(e, Notice)]
    assert notes == ["Plan approved; anvil is back in accept_edits mode and carries on."]


async def test_approval_with_edits_gives_the_model_the_edited_plan(ctx):
    policy = planning()
    attach_policy(ctx, policy)
    ctx.ask = FakeFrontEnd(lambda event: PlanDecision(approved=True, plan="1. Only fix `parse()`\n"))
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert result.output.startswith("The plan was approved with edits:\n\n1. Only fix `parse()`\n\nCarry on")
    assert "Add a parser test" not in result.output
    assert policy.mode == "ask" and result.summary == "plan approved with edits"


async def test_rejection_sends_the_feedback_back_and_stays_in_plan_mode(ctx):
    policy = planning()
    attach_policy(ctx, policy)
    ctx.ask = FakeFrontEnd(lambda event: PlanDecision(approved=False, feedback="Do not touch the CLI."))
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert policy.planning
    assert "rejected the plan. Their feedback: Do not touch the CLI." in result.output
    assert "call exit_plan_mode again" in result.output and result.summary == "plan rejected"
    ctx.ask = FakeFrontEnd(lambda event: PlanDecision(approved=False))
    silent = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert "no reason" in silent.output and "ask_user" in silent.output


async def test_headless_hands_the_plan_over_and_ends_the_turn(ctx):
    policy = planning()
    attach_policy(ctx, policy)
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert policy.planning, "nobody approved it, so nothing may change"
    [event] = [e for e in emitted(ctx) if isinstance(e, PlanProposed)]
    assert event.plan == PLAN and event.future is None
    assert event.to_dict() == {"type": "plan_proposed", "call_id": "call_7", "plan": PLAN}
    assert result.data == {"plan": PLAN} and result.end_turn
    assert "End your turn" in result.output


async def test_headless_in_auto_mode_approves_the_plan_by_itself(ctx):
    policy = ApprovalPolicy(auto_approve=True, mode="plan")
    attach_policy(ctx, policy)
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert policy.mode == "auto"
    assert result.output.startswith("The plan was approved:") and result.data["by"] == "auto-approve"  # type: ignore[index]
    assert not [e for e in emitted(ctx) if isinstance(e, PlanProposed)]


async def test_outside_plan_mode_nobody_is_asked(ctx):
    attach_policy(ctx, ApprovalPolicy())
    front = FakeFrontEnd(lambda event: PlanDecision(approved=False))
    ctx.ask = front
    result = await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    assert front.asked == [] and "not in plan mode" in result.output


async def test_a_review_without_a_decision_is_an_error_the_model_can_act_on(ctx):
    attach_policy(ctx, planning())
    ctx.ask = FakeFrontEnd(lambda event: None)
    with pytest.raises(ToolError, match="without a decision"):
        await ExitPlanMode().run(ExitPlanMode.Args(plan=PLAN), ctx)
    with pytest.raises(ToolError, match="plan is empty"):
        await ExitPlanMode().run(ExitPlanMode.Args(plan=" \n"), ctx)


def test_plan_mode_reminder_only_in_plan_mode():
    assert mode_reminder("plan") == PLAN_MODE_REMINDER and "exit_plan_mode" in PLAN_MODE_REMINDER
    assert mode_reminder("plan", told="plan") == PLAN_MODE_REMINDER, "repeated every turn in plan mode"
    assert mode_reminder("ask") is None and mode_reminder("auto", told="ask") is None
    assert "Plan mode is off" in (mode_reminder("accept_edits", told="plan") or "")


async def test_in_the_loop_an_approved_plan_lets_the_next_edit_through(project, tmp_path):
    turns = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\n"}}]},
             {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": PLAN}}]},
             {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\n"}}]},
             {"text": "done"}]
    ctx = ToolContext(root=project, data_dir=tmp_path / "data")
    policy = ApprovalPolicy(mode="plan")
    agent = Agent(ScriptedModel(turns), ToolRegistry([WriteFileTool(), *INTERACTION_TOOLS]), ctx,
                  system_prompt="test", policy=policy)
    attach_policy(ctx, policy)
    ctx.ask = FakeFrontEnd(lambda event: PlanDecision(approved=True))
    results = [e for e in [e async for e in agent.run_turn("plan, then do")] if isinstance(e, ToolResultEvent)]
    assert [(r.name, r.ok) for r in results] == [("write_file", False), ("exit_plan_mode", True),
                                                 ("write_file", True)]
    assert (project / "a.py").read_text() == "x = 1\n" and policy.mode == "ask"

"""Tools that need the person: ask_user (a clarifying question) and exit_plan_mode (a plan to approve).

Both go through ``ctx.ask``: the tool builds a request event with a future, the loop shows it to the
front end and returns the answer. When ``ctx.ask`` is None nobody can answer (headless), and the
tools say so instead of waiting forever:

- ask_user tells the model to decide for itself and state its assumption; in a headless task run
  (``ctx.state["blocking_questions"]``, see :func:`questions_block`) the question becomes a blocker instead:
  the turn ends ``blocked`` and the run resumes with the person's answer (``anvil answer``);
- exit_plan_mode hands the plan to the front end (a :class:`PlanProposed` without a future, which
  ``anvil -p`` prints) and asks the loop to end the turn (``ToolResult.end_turn``). In "auto" mode
  (``--auto-approve --mode plan``) the plan is approved by itself: the person approved everything.

The tools read the approval policy from ``ctx.state["policy"]`` (see :func:`attach_policy`) to leave
plan mode, and the current call id from ``ctx.state["call_id"]`` when the loop provides it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from pydantic import Field

from anvil.core.events import Notice, PlanDecision, PlanProposed, QuestionAsked
from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.tools.errors import ToolError


class PlanModeSwitch(Protocol):
    """What exit_plan_mode needs of the approval policy: the mode, and leaving plan mode."""

    mode: str
    previous_mode: str

    @property
    def planning(self) -> bool: ...

    def exit_plan(self) -> str: ...


POLICY_KEY = "policy"
CALL_ID_KEY = "call_id"
BLOCKING_KEY = "blocking_questions"
HEADLESS_QUESTION = ("No one can answer questions in this run (headless). Decide yourself, state your assumption "
                     "in your answer, and carry on.")
PLAN_MODE_REMINDER = (
    "[anvil] Plan mode is on: do not change anything yet. Read the code (read_file, grep, glob, list_files), "
    "ask the person if their intent is unclear (ask_user), and write the plan as a todo list (todo_write). When "
    "the plan is ready, call exit_plan_mode with it in Markdown: the steps in order, the files to change and how "
    "you will verify the result. Edits and commands that change things are refused until the plan is approved."
)


def questions_block(ctx: ToolContext, on: bool = True) -> None:
    """In a headless task run a question cannot be answered now but can be later: ask_user records it as a
    blocker and the run stops, instead of telling the model to guess."""
    ctx.state[BLOCKING_KEY] = on


def attach_policy(ctx: ToolContext, policy: PlanModeSwitch) -> None:
    """Give the interaction tools the policy whose mode they switch (the runtime calls this once)."""
    ctx.state[POLICY_KEY] = policy


def mode_reminder(mode: str, told: str | None = None) -> str | None:
    """A note for the model at the start of a turn: it cannot see the mode otherwise. In plan mode, every
    turn (a plan can take several); after leaving plan mode by hand (Shift+Tab, /mode), once. ``told`` is
    the mode the model last knew of (the mode at the end of the previous turn)."""
    if mode == "plan":
        return PLAN_MODE_REMINDER
    if told == "plan":
        return (f"[anvil] Plan mode is off (the person switched to {mode} mode): you may edit files and run "
                "commands again.")
    return None


def _call_id(ctx: ToolContext) -> str:
    return str(ctx.state.get(CALL_ID_KEY, ""))


def _policy(ctx: ToolContext) -> PlanModeSwitch | None:
    return ctx.state.get(POLICY_KEY)


class AskUserArgs(ToolArgs):
    question: str = Field(description="One clear question, with the context the person needs to answer it.")
    options: list[str] | None = Field(
        default=None, description="A few short choices, when there are clear ones; the person may still answer "
                                  "in their own words. Leave out for a free-text answer.")


class AskUser(Tool):
    name = "ask_user"
    description = (
        "Ask the person a question and wait for the answer. Use it when their intent is unclear and a wrong guess "
        "would waste work: which of two approaches, which file or behaviour they mean, a missing requirement. "
        "Offer options when there are a few clear choices. Do not ask what you can find out by reading the code, "
        "and do not ask for permission to run tools (approval is handled separately). Ask one question at a time."
    )
    Args = AskUserArgs
    kind = "other"  # a question for the person: it reads and changes nothing

    def phase(self, args: Any) -> str:
        return "Asking you"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        question = args.question.strip()
        if not question:
            raise ToolError("The question is empty. Write the question you want the person to answer.")
        options = tuple(dict.fromkeys(o.strip() for o in args.options or [] if o.strip()))
        if ctx.ask is None and ctx.state.get(BLOCKING_KEY):
            shown = question + (f" (options: {'; '.join(options)})" if options else "")
            return ToolResult(f"Recorded as a blocker: {shown}. Nobody can answer during this run, so it stops "
                              "here; it resumes with the person's answer. Call no more tools.",
                              summary=f"blocked: {_clip(question)}", blocked=shown)
        if ctx.ask is None:
            return ToolResult(HEADLESS_QUESTION, summary="no one to ask (headless)")
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        answer = await ctx.ask(QuestionAsked(_call_id(ctx), question, options, future))
        text = str(answer or "").strip()
        if not text:
            return ToolResult("The person gave no answer. Decide yourself, state your assumption in your answer, "
                              "and carry on.", summary="no answer")
        return ToolResult(f"The person answered: {text}", summary=_clip(text), data={"answer": text})


class ExitPlanModeArgs(ToolArgs):
    plan: str = Field(description="The plan in Markdown: the steps in order, the files to change, and how you "
                                  "will verify the result.")


class ExitPlanMode(Tool):
    name = "exit_plan_mode"
    description = (
        "In plan mode, present your plan to the person when it is ready. They approve it (possibly edited) or "
        "reject it with feedback. On approval you leave plan mode and carry on with the approved plan; on "
        "rejection, revise the plan and call this again. Read enough of the code first to make the plan concrete. "
        "Do not use it outside plan mode or for questions that need no code changes."
    )
    Args = ExitPlanModeArgs
    kind = "switch_mode"  # it changes nothing by itself: the person's approval does
    main_agent_only = True  # leaving plan mode is the main agent's call

    def phase(self, args: Any) -> str:
        return "Proposing a plan"

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        plan = args.plan.strip()
        if not plan:
            raise ToolError("The plan is empty. Write the plan in Markdown (steps, files, verification) and call "
                            "exit_plan_mode again.")
        policy = _policy(ctx)
        if policy is not None and not policy.planning:
            return ToolResult(f"You are not in plan mode (the mode is {policy.mode}), so no approval is needed. "
                              "Carry on with the plan; keep the todo list (todo_write) in step.",
                              summary="not in plan mode")
        if ctx.ask is None:
            if policy is not None and policy.previous_mode == "auto":
                return self._approved(ctx, policy, plan, plan, by="auto-approve")
            ctx.emit(PlanProposed(_call_id(ctx), plan))
            return ToolResult(
                "The plan was handed to the person for review; nobody can approve it in this run (headless), so "
                "nothing may be changed now. End your turn: reply with at most one short sentence and call no "
                "more tools.", summary="plan ready for review", data={"plan": plan}, end_turn=True)
        future: asyncio.Future[PlanDecision] = asyncio.get_running_loop().create_future()
        decision = await ctx.ask(PlanProposed(_call_id(ctx), plan, future))
        if not isinstance(decision, PlanDecision):
            raise ToolError("The plan review ended without a decision (the front end gave none). You are still in "
                            "plan mode: call exit_plan_mode again, or ask the person (ask_user) how to go on.")
        if decision.approved:
            return self._approved(ctx, policy, plan, decision.plan.strip() or plan, by="user")
        feedback = decision.feedback.strip()
        said = (f" Their feedback: {feedback}" if feedback
                else " They gave no reason: ask them (ask_user) what to change.")
        return ToolResult(f"The person rejected the plan.{said}\nYou are still in plan mode: revise the plan (read "
                          "more of the code if that helps) and call exit_plan_mode again with the new plan.",
                          summary="plan rejected", data={"approved": False, "feedback": feedback})

    @staticmethod
    def _approved(ctx: ToolContext, policy: PlanModeSwitch | None, proposed: str, final: str, by: str) -> ToolResult:
        edited = final != proposed
        mode = policy.exit_plan() if policy is not None else None
        if mode is not None:
            how = "automatically (auto mode)" if by == "auto-approve" else ("with your edits" if edited else "")
            ctx.emit(Notice(f"Plan approved {how}".rstrip() + f"; anvil is back in {mode} mode and carries on."))
        back = f" You are out of plan mode (now {mode} mode): you may edit files and run commands." if mode else ""
        return ToolResult(f"The plan was approved{' with edits' if edited else ''}:\n\n{final}\n\nCarry on with it; "
                          f"keep the todo list (todo_write) in step.{back}",
                          summary="plan approved" + (" with edits" if edited else ""),
                          data={"approved": True, "edited": edited, "plan": final, "mode": mode, "by": by})


def _clip(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


INTERACTION_TOOLS: list[Tool] = [AskUser(), ExitPlanMode()]

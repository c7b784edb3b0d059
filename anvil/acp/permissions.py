"""Approvals, questions and plans as ACP permission requests, and the client's answers back in anvil's words.

An approval offers allow once, always allow, deny once and always deny. "Always" is the rule anvil would save
(the same pattern the TUI shows) in the project's scope, named in the option; a request only the person may
answer once (a protected path, a command leaving the sandbox) offers no "always", nor does a command no safe
rule fits. A client that cannot answer (it does not implement the request, or the connection fails) denies:
the model is told why, and nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from acp import text_block, tool_content
from acp.schema import AllowedOutcome, PermissionOption, RequestPermissionResponse, ToolCallUpdate

from anvil.acp.updates import diff_contents, fenced
from anvil.core.events import ApprovalDecision, ApprovalRequested, PlanDecision, PlanProposed, QuestionAsked
from anvil.frontend.lines import always_patterns, cwd_text, rules_text, shown_path

CLIENT_CANNOT_ASK = ("Not run: this needs the person's approval, and the editor connected to anvil could not ask "
                     "them ({why}). Do without it, or say what you would have run and why; the person can allow "
                     "it with an allow rule ([permissions] allow = [...] in .anvil/config.toml).")
ANSWER_IN_CHAT = "answer-in-chat"


@dataclass(frozen=True)
class Always:
    """What an "always" answer saves: the patterns (one per part of a compound command) and the scope."""

    patterns: tuple[str, ...]
    scope: str

    @property
    def pattern(self) -> str:
        return rules_text(self.patterns).replace("`", "")


def always_rule(request: ApprovalRequested) -> Always | None:
    """The rules "always" would save, or None when none may be offered."""
    if request.person_only:
        return None
    patterns = always_patterns(request)
    if not patterns:
        return None
    # the project's rules file (.anvil/permissions.toml) when the policy has one, else this session
    return Always(patterns, "project" if "project" in request.rule_files else "session")


def approval_options(request: ApprovalRequested, root: Path) -> list[PermissionOption]:
    rule = always_rule(request)
    options = [PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once")]
    if rule is not None:
        where = _where(request, rule, root)
        options.append(PermissionOption(option_id="allow-always", name=f"Always allow `{rule.pattern}` {where}",
                                        kind="allow_always"))
    options.append(PermissionOption(option_id="reject-once", name="Deny", kind="reject_once"))
    if rule is not None and len(rule.patterns) == 1:  # denying every part of a compound command is too broad
        options.append(PermissionOption(option_id="reject-always",
                                        name=f"Always deny `{rule.pattern}` {_where(request, rule, root)}",
                                        kind="reject_always"))
    return options


def _where(request: ApprovalRequested, rule: Always, root: Path) -> str:
    if rule.scope == "project":
        return f"in this project ({shown_path(request.rule_files['project'], root)})"
    return "for this session"


def approval_tool_call(request: ApprovalRequested, root: Path) -> ToolCallUpdate:
    """The call the person is asked about: its diff for an edit, else the command (where it runs) or the
    arguments, and the reasons it needs asking."""
    content = list(diff_contents(request.diff, root)) if request.diff else []
    lines = []
    if request.command is not None:
        lines.append(fenced(request.command))
        if where := cwd_text(request):
            lines.append(where)
    lines += [f"⚠ {reason}" for reason in request.reasons]
    if lines:
        content.append(tool_content(text_block("\n\n".join(lines))))
    return ToolCallUpdate(tool_call_id=request.call_id, title=request.title or request.tool, status="pending",
                          content=content or None, raw_input=request.args)


def approval_decision(request: ApprovalRequested, response: RequestPermissionResponse) -> ApprovalDecision:
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome):  # the client cancelled the request: the turn is being cancelled
        return ApprovalDecision(False, by="interrupt")
    rule = always_rule(request)
    match outcome.option_id:
        case "allow-once":
            return ApprovalDecision(True)
        case "allow-always" if rule is not None:
            return ApprovalDecision(True, remember=rule.scope, pattern=rule.patterns[0], patterns=rule.patterns)
        case "reject-always" if rule is not None and len(rule.patterns) == 1:
            return ApprovalDecision(False, remember=rule.scope, pattern=rule.patterns[0], patterns=rule.patterns)
    return ApprovalDecision(False)


def cannot_ask(why: str) -> ApprovalDecision:
    """The answer when the client could not ask the person: a denial the model can act on."""
    return ApprovalDecision(False, CLIENT_CANNOT_ASK.format(why=why), by="client")


# -- questions (ask_user) and plans (exit_plan_mode) ---------------------------------------------------------


def question_options(event: QuestionAsked) -> list[PermissionOption]:
    """The question's choices to pick from; answering in the chat instead ends the turn so the person can."""
    options = [PermissionOption(option_id=f"option-{i}", name=choice, kind="allow_once")
               for i, choice in enumerate(event.options)]
    if not options:
        options.append(PermissionOption(option_id="decide", name="Let the model decide", kind="allow_once"))
    options.append(PermissionOption(option_id=ANSWER_IN_CHAT, name="I'll answer in the chat", kind="reject_once"))
    return options


def question_tool_call(event: QuestionAsked) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id=event.call_id, title=event.question, kind="other", status="pending",
                          content=[tool_content(text_block(event.question))])


def question_answer(event: QuestionAsked, response: RequestPermissionResponse) -> str | None:
    """The chosen option's text; "" to let the model decide; None when the person will answer in the chat."""
    outcome = response.outcome
    if not isinstance(outcome, AllowedOutcome) or outcome.option_id == ANSWER_IN_CHAT:
        return None
    if outcome.option_id.startswith("option-"):
        index = int(outcome.option_id.removeprefix("option-"))
        return event.options[index] if 0 <= index < len(event.options) else ""
    return ""


PLAN_OPTIONS = [PermissionOption(option_id="approve-plan", name="Approve the plan", kind="allow_once"),
                PermissionOption(option_id="keep-planning", name="Keep planning", kind="reject_once")]


def plan_tool_call(event: PlanProposed) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id=event.call_id, title="Proposed plan", kind="switch_mode", status="pending",
                          content=[tool_content(text_block(event.plan))])


def plan_decision(event: PlanProposed, response: RequestPermissionResponse) -> PlanDecision:
    outcome = response.outcome
    approved = isinstance(outcome, AllowedOutcome) and outcome.option_id == "approve-plan"
    return PlanDecision(approved, event.plan)

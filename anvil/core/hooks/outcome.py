"""What the hooks of one event decided, and how a hook's JSON answer is read into it.

A hook that exits 0 may print one JSON object. anvil reads its own fields and Claude Code's, both forms:

- ``decision`` ("approve"/"allow", "ask" or "deny"/"block" on pre_tool_use; "block" on user_prompt_submit,
  stop and post_tool_use) with ``reason``; Claude Code's ``hookSpecificOutput`` (``hookEventName``,
  ``permissionDecision`` allow/ask/deny with ``permissionDecisionReason``, ``updatedInput``,
  ``additionalContext``) wins over a top-level ``decision``.
- ``updated_input`` (anvil: the tool's new arguments, replacing them) or ``hookSpecificOutput.updatedInput``
  (Claude Code: the fields to change or add, merged over them).
- ``additional_context`` / ``additionalContext``: text for the model; ``system_message`` / ``systemMessage``:
  text for the person.
- ``continue: false`` with ``stopReason``: the turn ends after this event (the prompt is dropped, the tool call
  does not run); the reason is shown to the person.
- ``suppressOutput``: accepted; anvil never shows a hook's stdout in the transcript, so there is nothing more
  to hide.

Keys anvil does not know are reported to the person, never silently dropped: a misspelt ``permisionDecision``
must not quietly let a command through.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from anvil.core.hooks.claude import as_anvil_input, claude_event_name, merge_updated_input

BLOCKING_EVENTS = frozenset({"user_prompt_submit", "pre_tool_use", "stop"})
#: events whose hooks may end the turn (``continue: false``)
STOPPING_EVENTS = frozenset({"user_prompt_submit", "pre_tool_use", "post_tool_use", "stop"})
#: events whose hooks may add context for the model
CONTEXT_EVENTS = frozenset({"session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use"})
#: characters of context one hook may add; a chatty hook must not fill the model's context
CONTEXT_LIMIT = 10_000
_TOP_LEVEL = frozenset({"continue", "stopReason", "suppressOutput", "systemMessage", "system_message", "decision",
                        "reason", "hookSpecificOutput", "additional_context", "additionalContext", "updated_input",
                        "updatedInput"})
_SPECIFIC = frozenset({"hookEventName", "permissionDecision", "permissionDecisionReason", "updatedInput",
                       "additionalContext"})
_DECISIONS = {"approve": "approve", "allow": "approve", "ask": "ask", "deny": "deny", "block": "deny"}
_RANK = {None: 0, "approve": 1, "ask": 2, "deny": 3}  # the strongest decision of several hooks stands

Decision = Literal["approve", "ask", "deny"]


@dataclass
class HookOutcome:
    """What the hooks of one event decided. Empty (nothing blocked, nothing added) when none ran."""

    blocked: bool = False
    #: why it was blocked: for the model (pre_tool_use, stop) or the person (user_prompt_submit)
    message: str = ""
    #: pre_tool_use: "approve" = run without asking (never instead of the person where only they may answer),
    #: "ask" = ask the person even where the rules would allow it, "deny" comes with ``blocked``
    decision: Decision | None = None
    #: why a hook allowed or asked (for the person, in the approval)
    decision_reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""
    #: for the person: hook failures, timeouts, unknown keys, and hooks' system messages
    notices: list[str] = field(default_factory=list)
    #: a hook answered ``continue: false``: the turn ends, and ``stop_reason`` says why (to the person)
    stop_turn: bool = False
    stop_reason: str = ""
    ran: int = 0

    def add_context(self, text: str) -> None:
        text = text.strip()
        if len(text) > CONTEXT_LIMIT:
            text = text[:CONTEXT_LIMIT] + f"\n[hook context cut at {CONTEXT_LIMIT} characters]"
        if text:
            self.additional_context = f"{self.additional_context}\n\n{text}" if self.additional_context else text

    def block(self, event: str, reason: str) -> bool:
        self.blocked, self.message = True, reason.strip()[:CONTEXT_LIMIT]
        self.decision = "deny" if event == "pre_tool_use" else None
        return True

    def decide(self, decision: Decision, reason: str = "") -> None:
        if _RANK[decision] > _RANK[self.decision]:
            self.decision, self.decision_reason = decision, reason.strip()


def append_context(text: str, context: str) -> str:
    """``text`` (a prompt, a tool's output) with hook context after it, marked so the model knows its source."""
    return f"{text}\n\n<hook-context>\n{context}\n</hook-context>" if context.strip() else text


@dataclass
class HookAnswer:
    """One hook's JSON answer, read in the context of its event."""

    event: str
    label: str
    data: dict[str, Any]
    #: the tool's input as the hook saw it (pre_tool_use), for merging Claude Code's updatedInput
    tool_input: dict[str, Any] | None
    root: Path

    def apply(self, outcome: HookOutcome) -> bool:
        """Fold the answer into ``outcome``; True when it ends this event's hooks (a block, or continue false)."""
        data, specific = self.data, self._specific(outcome)
        self._report_unknown(outcome, specific)
        message = _text(data.get("systemMessage", data.get("system_message")))
        if message:
            outcome.notices.append(message)
        self._context(outcome, _text(data.get("additionalContext", data.get("additional_context"))))
        self._context(outcome, _text(specific.get("additionalContext")))
        self._updated_input(outcome, specific)
        if data.get("continue") is False:
            return self._stop(outcome, _text(data.get("stopReason")))
        decision = specific.get("permissionDecision") if "permissionDecision" in specific else data.get("decision")
        reason = _text(specific.get("permissionDecisionReason")) or _text(data.get("reason"))
        return self._decision(outcome, decision, reason) if decision is not None else False

    def _specific(self, outcome: HookOutcome) -> dict[str, Any]:
        specific = self.data.get("hookSpecificOutput")
        if specific is None:
            return {}
        named = specific.get("hookEventName") if isinstance(specific, dict) else None
        if not isinstance(specific, dict) or named not in (None, self.event, claude_event_name(self.event)):
            outcome.notices.append(f"The {self.label} sent hookSpecificOutput for {named or 'no event'}, not for "
                                   f"{claude_event_name(self.event)}; it was ignored.")
            return {}
        return specific

    def _report_unknown(self, outcome: HookOutcome, specific: dict[str, Any]) -> None:
        unknown = [key for key in self.data if key not in _TOP_LEVEL]
        unknown += [f"hookSpecificOutput.{key}" for key in specific if key not in _SPECIFIC]
        if unknown:
            outcome.notices.append(f"The {self.label} sent {', '.join(unknown)}, which anvil does not know; "
                                   "ignored. Check the spelling against the hooks section of the README.")

    def _context(self, outcome: HookOutcome, text: str) -> None:
        if not text:
            return
        if self.event in CONTEXT_EVENTS:
            outcome.add_context(text)
        else:
            outcome.notices.append(f"The {self.label} sent additionalContext, which {self.event} cannot pass to the "
                                   "model; it was ignored.")

    def _updated_input(self, outcome: HookOutcome, specific: dict[str, Any]) -> None:
        replaced = self.data.get("updated_input", self.data.get("updatedInput"))
        merged = specific.get("updatedInput")
        if replaced is None and merged is None:
            return
        if self.event != "pre_tool_use" or not isinstance(merged if merged is not None else replaced, dict):
            outcome.notices.append(f"The {self.label} sent updatedInput, which only a pre_tool_use hook may send "
                                   "and only as a JSON object of the tool's arguments; it was ignored.")
            return
        if isinstance(merged, dict):
            outcome.updated_input = merge_updated_input(self.tool_input or {}, merged, self.root)
        else:
            outcome.updated_input = as_anvil_input(replaced, self.root)

    def _stop(self, outcome: HookOutcome, reason: str) -> bool:
        reason = reason or "no reason given"
        if self.event not in STOPPING_EVENTS:
            outcome.notices.append(f"The {self.label} answered continue: false ({reason}), but {self.event} has "
                                   "no turn to stop; anvil went on.")
            return False
        outcome.stop_turn, outcome.stop_reason = True, reason
        if self.event in ("pre_tool_use", "user_prompt_submit"):
            outcome.block(self.event, f"A hook ended the turn: {reason}")
        return True

    def _decision(self, outcome: HookOutcome, decision: Any, reason: str) -> bool:
        word = _DECISIONS.get(decision) if isinstance(decision, str) else None
        if self.event == "pre_tool_use" and word in ("approve", "ask"):
            outcome.decide(word, reason)
            return False
        if word == "deny" and self.event in BLOCKING_EVENTS:
            return outcome.block(self.event, reason or f"Blocked by the {self.label}.")
        if word == "deny" and self.event == "post_tool_use":
            outcome.add_context(reason or f"The {self.label} objected to this call's result.")
            return False
        outcome.notices.append(f"The {self.label} sent decision {decision!r}, which {self.event} does not take; it "
                               "was ignored. pre_tool_use takes allow/ask/deny; user_prompt_submit, stop and "
                               "post_tool_use take block.")
        return False


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""

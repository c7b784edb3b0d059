"""Approval policy: decides, for each tool call, whether it runs, is asked about, or is refused.

Front ends never decide; they only ask the person when the verdict is ``ask``. Headless mode
turns ``ask`` into a refusal that tells the model why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from anvil.core.tools.base import Tool, ToolContext

Action = Literal["allow", "ask", "deny"]
#: ask: commands are asked about; accept_edits: edits apply without asking even when ask_edits is on;
#: auto: everything runs except the hard-deny list. Front ends cycle these (Shift+Tab).
Mode = Literal["ask", "accept_edits", "auto"]
MODES: tuple[Mode, ...] = ("ask", "accept_edits", "auto")


@dataclass(frozen=True)
class Verdict:
    action: Action
    #: who or what decided: "auto-approve", "read-only tool", a rule pattern, "hard-deny"...
    by: str = ""
    reasons: tuple[str, ...] = ()
    #: for "deny": what the model is told
    message: str = ""
    #: for "ask": the rule "always allow" would save
    suggested_pattern: str | None = None


class ApprovalPolicy:
    """The minimal policy: tools that declare a need for approval are asked about,
    unless auto-approve is on."""

    def __init__(self, auto_approve: bool = False) -> None:
        self.mode: Mode = "auto" if auto_approve else "ask"

    @property
    def auto_approve(self) -> bool:
        return self.mode == "auto"

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown approval mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode = mode

    def next_mode(self) -> Mode:
        """Cycle to the next mode and return it (Shift+Tab in the front ends)."""
        self.mode = MODES[(MODES.index(self.mode) + 1) % len(MODES)]
        return self.mode

    def evaluate(self, tool: Tool, args: Any, ctx: ToolContext) -> Verdict:
        if not tool.needs_approval(args, ctx):
            return Verdict("allow", by="no approval needed")
        if self.auto_approve:
            return Verdict("allow", by="auto-approve")
        return Verdict("ask", suggested_pattern=None)

    def remember(self, tool: str, pattern: str, scope: str) -> None:
        """Keep an "always allow" rule. The minimal policy has no rules yet."""
        return None

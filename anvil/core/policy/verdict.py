"""What the policy decided about one tool call: allow, ask or deny, who decided, and what to tell whom.

A module of its own because both the approval policy and the command policy return it, and the approval
policy calls the command policy: the shared record sits below both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Action = Literal["allow", "ask", "deny"]


@dataclass(frozen=True)
class Verdict:
    action: Action
    #: who or what decided: "auto-approve", a rule pattern, "hard-deny", "no approval needed"...
    by: str = ""
    reasons: tuple[str, ...] = ()
    #: for "deny" (and "ask", for headless): what the model is told
    message: str = ""
    #: for "ask": the rule "always allow" would save (the first, when it saves several)
    suggested_pattern: str | None = None
    #: for "ask": every rule "always allow" saves: one per part of a compound command no rule covers
    suggested_patterns: tuple[str, ...] = ()
    #: for a command: the directory it was evaluated in (the shell's current directory, else the project root)
    cwd: Path | None = None
    #: for "ask": only the person may answer (a protected path, a command leaving the sandbox); a hook's
    #: "approve" does not stand in for them
    person_only: bool = False
    #: why "always allow" is not offered for this call, when the reason is not simply that no rule fits it
    no_rule_reason: str = ""

"""The state of one turn, which the agent's steps read and update, and what counts as changing files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from anvil.core.events import TurnEndReason
from anvil.core.job_events import BlockerRaised
from anvil.core.loop.verify import CheckResult
from anvil.core.model.protocol import Completion
from anvil.core.tools.base import Tool, ToolResult


@dataclass
class TurnState:
    prompt: str
    number: int = 0
    iterations: int = 0  # model calls so far
    over: bool = False
    reason: TurnEndReason = "done"
    message: str = ""
    completion: Completion | None = None  # the last model reply
    changed: bool = False  # files changed since the last verification
    checks: list[CheckResult] | None = field(default_factory=list)  # the last checks run (None: interrupted)
    fix_until: int | None = None  # after failed checks: the model calls allowed for fixing them
    stuck: str | None = None  # why a loop guard stopped the turn
    end_requested: bool = False  # a tool asked for the turn to end (a plan handed over for review)
    cut_off: bool = False  # the last reply stopped at the output limit and the model was asked to go on
    continuations: int = 0  # text replies cut off at the output limit this turn
    hook_stop: str | None = None  # a hook answered continue: false, for this reason
    images: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (tool, image) for the model to see
    restarted: bool = False  # a workflow began a new phase: a fresh conversation, the old reply's calls dropped
    phase_start: int = 0  # model calls made before the current phase (max_iterations counts each phase's own)
    written: set[Path] = field(default_factory=set)  # files the turn's calls wrote (the automatic fixers' input)
    tried: list[str] = field(default_factory=list)  # one line per call, for a blocker's "what was tried"
    blocker: BlockerRaised | None = None  # the turn cannot go on without the person (a headless task run)

    def end(self, reason: TurnEndReason = "done", message: str = "") -> None:
        self.over, self.reason, self.message = True, reason, message


def changed_files(tool: Tool | None, result: ToolResult) -> bool:
    """Whether a finished call changed the project's files (what makes a final verification worth running).

    The result says so when it knows; otherwise a tool that mutates does, except one that runs things (kind
    "execute"), whose effects are what the checks are there to find."""
    if tool is None or not result.ok:
        return False
    if result.changed is not None:
        return result.changed
    return tool.mutates and tool.kind != "execute"

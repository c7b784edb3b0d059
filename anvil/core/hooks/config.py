"""The ``[hooks]`` table: which command runs at which event, for which tools, and in whose words.

Config (a ``[hooks]`` table in the settings, :class:`HooksConfig`)::

    [[hooks.pre_tool_use]]
    matcher = "edit_file|write_file|multi_edit"   # tool name: glob, or regex matching the whole name; omitted = all
    command = "python3 .anvil/hooks/block_secrets.py"
    timeout = 10                                   # seconds, default 30; the process group is killed after it

A matcher may name tools the way Claude Code does (``Bash``, ``Edit|Write``: :mod:`anvil.core.hooks.claude`).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from anvil.core.hooks.claude import Dialect, claude_tool_name, names_claude_tools

HookEvent = Literal["session_start", "user_prompt_submit", "pre_tool_use", "post_tool_use", "pre_compact", "stop",
                    "session_end", "notification"]
HOOK_EVENTS: tuple[str, ...] = get_args(HookEvent)


class HookCommand(BaseModel):
    """One hook: a shell command run at an event."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    command: str = Field(min_length=1)
    """Shell command, run by bash in the project root with the event as JSON on stdin."""
    matcher: str | None = None
    """Which tools (tool events) or sources (session_start: startup/resume; pre_compact: auto/manual) it runs for:
    a glob (``mcp__github__*``) or a regex matching the whole name (``edit_file|write_file``); Claude Code's tool
    names (``Bash``, ``Edit|Write``) work too. Omitted: all."""
    timeout: float = Field(30.0, gt=0, le=3600)
    """Seconds the hook may run before its process group is killed and a notice reports it."""
    format: Literal["anvil", "claude"] | None = None
    """Whose words the event on stdin uses: ``claude`` gives Claude Code's ``hook_event_name`` (PreToolUse) and
    ``tool_name`` (Bash), so its hook scripts work unchanged; ``anvil`` gives anvil's. Unset: ``claude`` when the
    matcher names Claude Code's tools, else ``anvil``. Both names are always there as ``anvil_*`` and
    ``claude_*`` fields."""

    @property
    def dialect(self) -> Dialect:
        if self.format is not None:
            return self.format
        return "claude" if names_claude_tools(self.matcher) else "anvil"


class HooksConfig(BaseModel):
    """Hooks by event; each event's hooks run in order."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    session_start: list[HookCommand] = Field(default_factory=list)
    """When a session starts or resumes; stdout is context for the model."""
    user_prompt_submit: list[HookCommand] = Field(default_factory=list)
    """Before a prompt reaches the model; may add context, or block it with exit 2."""
    pre_tool_use: list[HookCommand] = Field(default_factory=list)
    """Before a tool call; may allow, ask, deny (exit 2) or rewrite its input."""
    post_tool_use: list[HookCommand] = Field(default_factory=list)
    """After a tool call; may add a note for the model (formatters, linters)."""
    pre_compact: list[HookCommand] = Field(default_factory=list)
    """Before the history is compacted."""
    stop: list[HookCommand] = Field(default_factory=list)
    """When the model ends its turn; exit 2 asks it to go on, with stderr as the reason."""
    session_end: list[HookCommand] = Field(default_factory=list)
    """When the session closes."""
    notification: list[HookCommand] = Field(default_factory=list)
    """When anvil waits for the person (an approval, a question)."""

    def for_event(self, event: str) -> list[HookCommand]:
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(HOOK_EVENTS)}")
        hooks: list[HookCommand] = getattr(self, event)
        return hooks

    def any(self) -> bool:
        return any(self.for_event(event) for event in HOOK_EVENTS)


def matcher_matches(matcher: str | None, subject: str | None) -> bool:
    """A glob or a whole-name regex, tried on anvil's name and on Claude Code's name of the tool; no matcher,
    ``*``, or an event without a subject matches everything."""
    pattern = (matcher or "").strip()
    if not pattern or pattern == "*" or subject is None:
        return True
    return any(_matches(pattern, name) for name in dict.fromkeys((subject, claude_tool_name(subject))))


def _matches(pattern: str, name: str) -> bool:
    if fnmatchcase(name, pattern):
        return True
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:  # a glob such as "*_file" is not a valid regex: the glob test above was the one that counts
        return False

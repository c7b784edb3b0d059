"""Claude Code's words for what anvil's hooks see and say, so that hooks written for Claude Code work unchanged.

One table names Claude Code's tools by anvil's (:data:`CLAUDE_TOOLS`), one its events (:data:`CLAUDE_EVENTS`).
A matcher may use either name (``Bash`` matches ``run_command``; ``Edit|Write`` matches ``edit_file`` and
``write_file``). A hook speaks Claude Code's dialect when it comes from a project's ``.claude/settings.json``,
when its matcher names Claude Code's tools, or when its ``format`` says so: its stdin then carries Claude
Code's ``hook_event_name`` (``PreToolUse``) and ``tool_name`` (``Bash``), anvil's names beside them.

:func:`hooks_from_claude_settings` reads the ``hooks`` table of Claude Code's settings file into anvil's
``[hooks]`` shape.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

Dialect = Literal["anvil", "claude"]

#: Claude Code's tool names, and the anvil tool that does the same thing.
CLAUDE_TOOLS: dict[str, str] = {
    "Bash": "run_command", "Read": "read_file", "Write": "write_file", "Edit": "edit_file",
    "MultiEdit": "multi_edit", "Grep": "grep", "Glob": "glob", "LS": "list_files", "WebFetch": "web_fetch",
    "WebSearch": "web_search", "Task": "task", "TodoWrite": "todo_write",
}
_ANVIL_TO_CLAUDE = {anvil: claude for claude, anvil in CLAUDE_TOOLS.items()}

#: Claude Code's hook events, and anvil's event of the same moment.
CLAUDE_EVENTS: dict[str, str] = {
    "SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use", "PreCompact": "pre_compact", "Stop": "stop", "SessionEnd": "session_end",
    "Notification": "notification",
}
_EVENT_IN_CLAUDE = {anvil: claude for claude, anvil in CLAUDE_EVENTS.items()}

#: anvil's approval modes in Claude Code's words (its ``permission_mode`` field)
PERMISSION_MODES = {"ask": "default", "accept_edits": "acceptEdits", "auto": "bypassPermissions", "plan": "plan"}

_WORD = re.compile(r"[A-Za-z]+")


def claude_tool_name(name: str) -> str:
    """Claude Code's name for an anvil tool (``run_command`` → ``Bash``); MCP and other tools keep theirs."""
    return _ANVIL_TO_CLAUDE.get(name, name)


def claude_event_name(event: str) -> str:
    return _EVENT_IN_CLAUDE.get(event, event)


def names_claude_tools(matcher: str | None) -> bool:
    """Whether a matcher is written with Claude Code's tool names (``Bash``, ``Edit|Write``)."""
    return any(word in CLAUDE_TOOLS for word in _WORD.findall(matcher or ""))


def with_file_path(tool_input: dict[str, Any], root: Path) -> dict[str, Any]:
    """The tool's input with Claude Code's ``file_path`` (absolute) beside anvil's ``path``."""
    path = tool_input.get("path")
    if not isinstance(path, str) or "file_path" in tool_input:
        return tool_input
    return {**tool_input, "file_path": str((root / path).resolve(strict=False))}


def as_anvil_input(tool_input: dict[str, Any], root: Path) -> dict[str, Any]:
    """A tool input written the Claude Code way back in anvil's terms: its ``file_path`` becomes ``path``
    (relative to the project when inside it), since anvil's tools name the file ``path``."""
    if "file_path" not in tool_input:
        return tool_input
    converted = dict(tool_input)
    file_path = converted.pop("file_path")
    if isinstance(file_path, str):
        target = Path(file_path)
        inside = target.is_absolute() and target.resolve(strict=False).is_relative_to(root)
        converted["path"] = target.resolve(strict=False).relative_to(root).as_posix() if inside else file_path
    return converted


def merge_updated_input(original: dict[str, Any], updated: dict[str, Any], root: Path) -> dict[str, Any]:
    """Claude Code's ``updatedInput`` holds the fields to change or add: merged over the input."""
    return {**original, **as_anvil_input(updated, root)}


def hooks_from_claude_settings(settings: Any) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """The ``hooks`` table of a Claude Code settings file, as anvil's ``[hooks]`` table (every hook in Claude
    Code's dialect), and a line for each hook anvil cannot run (another hook type, an event anvil lacks)."""
    table = settings.get("hooks") if isinstance(settings, dict) else None
    if table is None:
        return {}, []
    if not isinstance(table, dict):
        return {}, ["its \"hooks\" is not an object of events; no hook was read"]
    hooks: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    for claude_event, groups in table.items():
        event = CLAUDE_EVENTS.get(claude_event)
        if event is None:
            skipped.append(f"{claude_event} hooks (anvil has no such event)")
            continue
        for group in groups if isinstance(groups, list) else []:
            entries, problems = _group(claude_event, group)
            hooks.setdefault(event, []).extend(entries)
            skipped += problems
    return hooks, skipped


def _group(claude_event: str, group: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(group, dict):
        return [], [f"a {claude_event} entry that is not an object"]
    matcher = group.get("matcher")
    entries, skipped = [], []
    for hook in group.get("hooks") or []:
        kind = hook.get("type", "command") if isinstance(hook, dict) else None
        if kind != "command" or not isinstance(hook.get("command"), str) or not hook["command"].strip():
            skipped.append(f"a {claude_event} hook of type {kind!r} (anvil runs only \"command\" hooks)")
            continue
        entry: dict[str, Any] = {"command": hook["command"], "format": "claude"}
        if isinstance(matcher, str) and matcher:
            entry["matcher"] = matcher
        if isinstance(hook.get("timeout"), int | float) and 0 < hook["timeout"] <= 3600:
            entry["timeout"] = hook["timeout"]
        entries.append(entry)
    return entries, skipped

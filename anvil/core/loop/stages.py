"""Stage words for front ends, derived from the tool calls and their tools' traits: what the model is doing,
in one word.

exploring (reading, searching), planning (todo list), creating (a new file), editing (changing files),
testing (running tests before changing anything), fixing (editing after a failed test or check run),
verifying (running tests or checks after edits). The stage is decided before the tool runs, from the
call and what came before it in the turn; results update that memory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from anvil.core.tools.base import PreparedCall
from anvil.core.tools.shell.test_runner import runs_test_runner

Stage = Literal["exploring", "planning", "creating", "editing", "testing", "fixing", "verifying"]

_CHECK_COMMAND = re.compile(r"(^|[\s;&|(/])(ruff|mypy|pyright|flake8|pylint|eslint|tsc|black\s+--check|"
                            r"cargo\s+(check|clippy)|go\s+vet|shellcheck)\b")
_LOOK_COMMAND = re.compile(r"^\s*(ls|cat|head|tail|find|tree|wc|pwd|rg|grep|git\s+(status|diff|log|show|blame))\b")


def _command(call: PreparedCall) -> str | None:
    """The shell command a call runs (for tools that run one and arguments that validated)."""
    if call.tool is None or call.args is None:
        return None
    try:
        return call.tool.command(call.args)
    except Exception:  # a stage word is not worth failing a call or a turn for
        return None


def _runs_tests(call: PreparedCall) -> bool:
    if call.tool is not None and call.tool.runs_tests:
        return True
    command = _command(call)
    return command is not None and runs_test_runner(command)


class StageTracker:
    """Remembers, within a turn, whether files changed since the last test run and whether that run failed."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.edited_since_test = False
        self.last_test_failed = False

    def stage(self, call: PreparedCall, root: Path | None = None) -> Stage | None:
        """The stage a call starts, from its tool's traits; None when the call says nothing about it (e.g. an
        unknown command)."""
        tool = call.tool
        if tool is None:
            return "exploring"
        if tool.kind == "think":
            return "planning"
        if tool.kind == "edit":
            return "creating" if _creates(call, root) else "fixing" if self.last_test_failed else "editing"
        if _runs_tests(call):
            return "verifying" if self.edited_since_test else "testing"
        command = _command(call)
        if command is not None:
            if _CHECK_COMMAND.search(command):
                return "verifying"
            return "exploring" if _LOOK_COMMAND.search(command) else None
        return None if tool.mutates else "exploring"

    def observe(self, call: PreparedCall, ok: bool, changed_files: bool) -> None:
        """Update the memory with a finished call (``changed_files``: it changed the project's files)."""
        if _runs_tests(call):
            self.last_test_failed = not ok
            self.edited_since_test = False
        elif changed_files:
            self.edited_since_test = True


def _creates(call: PreparedCall, root: Path | None) -> bool:
    """An edit that writes only paths that do not exist yet (new files), by the paths its tool declares."""
    if root is None or call.tool is None or call.args is None:
        return False
    targets = call.tool.write_targets(call.args)
    try:
        return bool(targets) and not any((root / path).exists() for path in targets)
    except (OSError, ValueError):  # a name the file system rejects: the tool will say so
        return False

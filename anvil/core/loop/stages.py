"""Stage words for front ends, derived from the tool calls: what the model is doing, in one word.

exploring (reading, searching), planning (todo list), creating (a new file), editing (changing files),
testing (running tests before changing anything), fixing (editing after a failed test or check run),
verifying (running tests or checks after edits). The stage is decided before the tool runs, from the
call and what came before it in the turn; results update that memory.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

Stage = Literal["exploring", "planning", "creating", "editing", "testing", "fixing", "verifying"]

_EXPLORING = {"read_file", "grep", "glob", "list_files", "todo_read", "command_output"}
_EDITS = {"edit_file", "multi_edit", "apply_patch"}
_TEST_COMMAND = re.compile(
    r"(^|[\s;&|(/])(pytest|py\.test|tox|nox|jest|vitest|mocha|phpunit|rspec|ctest)\b"
    r"|\b(python3?|uv run|poetry run)\s+-m\s+(pytest|unittest)\b"
    r"|\b(npm|pnpm|yarn|bun)\s+(run\s+)?test\b|\b(go|cargo|dotnet|mix|deno)\s+test\b|\bmake\s+(test|check)\b")
_CHECK_COMMAND = re.compile(r"(^|[\s;&|(/])(ruff|mypy|pyright|flake8|pylint|eslint|tsc|black\s+--check|"
                            r"cargo\s+(check|clippy)|go\s+vet|shellcheck)\b")
_LOOK_COMMAND = re.compile(r"^\s*(ls|cat|head|tail|find|tree|wc|pwd|rg|grep|git\s+(status|diff|log|show|blame))\b")


class StageTracker:
    """Remembers, within a turn, whether files changed since the last test run and whether that run failed."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.edited_since_test = False
        self.last_test_failed = False

    def stage(self, name: str, args: dict[str, Any], root: Path | None = None,
              read_only: bool = True) -> Stage | None:
        """The stage a call starts; None when the call says nothing about it (e.g. an unknown command)."""
        if name in _EXPLORING:
            return "exploring"
        if name == "todo_write":
            return "planning"
        if name == "write_file" and root is not None and isinstance(args.get("path"), str):
            try:
                exists = (root / args["path"]).exists()
            except (OSError, ValueError):  # a name the file system rejects: the tool will say so
                exists = True
            if not exists:
                return "creating"
        if name in _EDITS or name == "write_file":
            return "fixing" if self.last_test_failed else "editing"
        if name == "run_tests":
            return "verifying" if self.edited_since_test else "testing"
        if name == "run_command":
            command = str(args.get("command", ""))
            if _TEST_COMMAND.search(command):
                return "verifying" if self.edited_since_test else "testing"
            if _CHECK_COMMAND.search(command):
                return "verifying"
            if _LOOK_COMMAND.search(command):
                return "exploring"
            return None
        return "exploring" if read_only else None

    def observe(self, name: str, args: dict[str, Any], ok: bool, changed_files: bool) -> None:
        """Update the memory with a finished call (``changed_files``: it changed the project's files)."""
        is_test = name == "run_tests" or (name == "run_command" and bool(_TEST_COMMAND.search(
            str(args.get("command", "")))))
        if is_test:
            self.last_test_failed = not ok
            self.edited_since_test = False
        elif changed_files:
            self.edited_since_test = True

"""Scripted turns and setups the TUI and plain REPL tests share, so both front ends are tried on the same."""

from __future__ import annotations

from pathlib import Path

from anvil.config import user_config_dir

TOUCH = [{"tool_calls": [{"name": "run_command", "arguments": {"command": "touch made.txt"}}]}, {"text": "ok"}]
CD_THEN_TOUCH = [{"tool_calls": [{"name": "run_command", "arguments": {"command": "cd sub"}}]},
                 {"tool_calls": [{"name": "run_command", "arguments": {"command": "touch here.txt"}}]},
                 {"text": "done"}]
WRITE = [{"tool_calls": [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "draft\n"}}]},
         {"text": "written"}]
#: the model tries to change anvil's own configuration (asked about even in auto mode)
WRITE_CONFIG = [{"tool_calls": [{"name": "write_file", "arguments": {"path": ".anvil/config.toml",
                                                                     "content": "auto_approve = true\n"}}]},
                {"text": "tried"}]
PROTECTED_REASON = ("anvil's own configuration: .anvil/config.toml (a change here can grant permissions or add hooks "
                    "and commands that anvil then runs unasked)")


def allow_cd(project: Path) -> None:
    """A user rule lets `cd` run without asking, so the next command is asked about from the subdirectory."""
    (project / "sub").mkdir()
    rules = user_config_dir() / "permissions.toml"
    rules.parent.mkdir(parents=True, exist_ok=True)
    rules.write_text('allow = ["cd *"]\n')


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


#: a phased job's first phase (its todos done, five written for the next) and the start of the second; then the
#: model stops working, so the job pauses in phase 2 at todo 2
PHASED_JOB = [
    {"text": "Looking at the project before planning anything.",
     "tool_calls": [_call("todo_complete", id=1), _call("todo_complete", id=2), _call("todo_complete", id=3)]},
    {"tool_calls": [_call("todo_write", phase="Fix", todos=[{"content": f"step {n}"} for n in range(1, 6)])]},
    {"tool_calls": [_call("todo_complete", id=4)]},
    {"tool_calls": [_call("todo_complete", id=1)]},
    *[{"text": "Waiting for you."}] * 4,
]

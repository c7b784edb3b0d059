"""Task files: a YAML header and a Markdown body; every problem is one line naming the file and what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.core.tasks.taskfile import TaskFileError, load_task, parse_task

FULL = """---
title: Command-line task tracker
prd: docs/requirements.md
verify: ["ruff check .", "python -m pytest -q"]
max_iterations: 40
workflow: none
complexity: high
timeout: 120
check: cmp a b
expect: done
---
Build the tracker.

It stores tasks in SQLite.
"""


def write(folder: Path, text: str, name: str = "task.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_the_header_and_the_body(tmp_path: Path) -> None:
    (tmp_path / "tracker" / "docs").mkdir(parents=True)
    (tmp_path / "tracker" / "docs" / "requirements.md").write_text("# PRD\n")
    spec = load_task(write(tmp_path / "tracker", FULL))
    assert spec.title == "Command-line task tracker" and spec.name == "tracker"
    assert spec.description == "Build the tracker.\n\nIt stores tasks in SQLite."
    assert spec.prd == (tmp_path / "tracker" / "docs" / "requirements.md").resolve()  # beside the task file
    assert spec.verify == ("ruff check .", "python -m pytest -q") and spec.check == ("cmp a b",)
    assert (spec.max_iterations, spec.workflow, spec.complexity, spec.timeout) == (40, "none", "high", 120.0)
    assert load_task(tmp_path / "tracker").path == spec.path  # a task folder means its task.md


def test_defaults_and_a_single_verify_command(tmp_path: Path) -> None:
    spec = load_task(write(tmp_path, "---\ntitle: Fix it\nverify: pytest -q\n---\nThe bug.\n", "fix-bug.md"))
    assert spec.verify == ("pytest -q",) and spec.workflow == "none" and spec.expect == "done"
    assert spec.prd is None and spec.max_iterations is None and spec.name == "fix-bug"


def test_a_file_without_a_header_takes_its_first_heading(tmp_path: Path) -> None:
    spec = load_task(write(tmp_path, "# Rename the helper\n\nEverywhere.\n", "rename.md"))
    assert spec.title == "Rename the helper" and spec.verify == ()
    assert load_task(write(tmp_path, "Just words.\n", "plain.md")).title == "plain"


@pytest.mark.parametrize(("header", "expected"), [
    ("titel: Typo", "unknown key 'titel' in the front matter. Known keys: title, prd, verify"),
    ("max_iterations: 0", "'max_iterations' should be a whole number of 1 or more, not 0."),
    ("verify: 3", "'verify' should be a command or a list of commands"),
    ("complexity: huge", "'complexity' should be low, medium or high, not 'huge'."),
    ("expect: maybe", "'expect' should be done or blocked, not 'maybe'."),
    ("prd: missing.md", "the prd file missing.md was not found at"),
    ("title: [unclosed", "the front matter is not valid YAML (line 2)"),
    ("- a list", "the front matter should be keys and values"),
])
def test_every_problem_is_one_line_naming_the_file(tmp_path: Path, header: str, expected: str) -> None:
    path = write(tmp_path, f"---\n{header}\n---\nBody.\n")
    with pytest.raises(TaskFileError) as caught:
        load_task(path)
    message = str(caught.value)
    assert message.startswith(str(path.resolve())) and expected in message and "\n" not in message


def test_unreadable_and_unclosed_files(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="No task file at"):
        load_task(tmp_path / "nothing.md")
    with pytest.raises(TaskFileError, match=r"is a folder without a task\.md"):
        load_task(tmp_path)
    with pytest.raises(TaskFileError, match="never ends"):
        parse_task("---\ntitle: x\n", tmp_path / "t.md")

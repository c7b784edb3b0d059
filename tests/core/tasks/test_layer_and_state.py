"""The task layer of the system prompt (PRD cut to its budget, previous clarifications, the intent preview) and the
task's state between runs."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from anvil.core.tasks.layer import preview_reason, task_layer
from anvil.core.tasks.state import BlockerRecord, TaskState, TaskStore
from anvil.core.tasks.taskfile import TaskSpec, parse_task


def spec(tmp_path: Path, header: str = "", body: str = "Do the thing.") -> TaskSpec:
    return parse_task(f"---\ntitle: The task\n{header}---\n{body}\n", tmp_path / "task.md")


def project(tmp_path: Path, files: int) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    (root / ".git").mkdir()  # anvil's and hidden files do not make a project less empty
    (root / ".git" / "config").write_text("x")
    for n in range(files):
        (root / f"module{n}.py").write_text("x = 1\n")
    return root


def test_the_layer_holds_the_task_the_prd_and_the_clarifications(tmp_path: Path) -> None:
    (tmp_path / "prd.md").write_text("# Requirements\n\nStore tasks in SQLite.\n")
    answered = [BlockerRecord("Which database?", "ask_user", answer="SQLite, one file."),
                BlockerRecord("Python version?", "ask_user", answer="3.11")]
    text = task_layer(spec(tmp_path, "prd: prd.md\n"), tmp_path, answered, verify=["pytest -q"])
    assert text.startswith("# Task\n\n**Title**: The task\n\nDo the thing.")
    assert "## Requirements (PRD: prd.md)\n\n# Requirements\n\nStore tasks in SQLite." in text
    assert ("## Previous clarifications" in text and "Q: Which database?\nA: SQLite, one file.\n\nQ: Python "
            "version?\nA: 3.11" in text)
    assert "anvil runs `pytest -q`" in text and "call ask_user with one precise question" in text
    assert "## Before your first change" not in text  # no preview asked for


def test_a_long_prd_is_cut_to_its_budget_saying_so(tmp_path: Path) -> None:
    lines = [f"Requirement {n}: the program does thing number {n}." for n in range(200)]
    (tmp_path / "prd.md").write_text("\n".join(lines) + "\nTHE LAST LINE\n")
    text = task_layer(spec(tmp_path, "prd: prd.md\n"), tmp_path, [], prd_budget=1000)
    prd = text.split("## Requirements (PRD: prd.md)\n\n")[1].split("\n\n## ")[0]
    assert prd.startswith("Requirement 0:") and "THE LAST LINE" not in prd
    kept = prd.split("\n\n[The PRD is cut here")[0]
    assert len(kept) <= 1000 and kept.endswith(".")  # cut at a line's end
    total = len((tmp_path / "prd.md").read_text().strip())
    assert f"[The PRD is cut here: {len(kept):,} of {total:,} characters shown (task_prd_chars); read prd.md" in prd


def test_a_prd_outside_the_project_says_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "prd.md").write_text("x" * 3000)
    root = project(tmp_path, 0)
    text = task_layer(spec(tmp_path, "prd: prd.md\n"), root, [], prd_budget=1000)
    assert f"## Requirements (PRD: {tmp_path / 'prd.md'})" in text
    assert "the rest is outside the project; ask if you need it" in text


def test_when_a_task_gets_an_intent_preview(tmp_path: Path) -> None:
    empty, full = project(tmp_path / "a", 2), project(tmp_path / "b", 6)
    assert preview_reason(spec(tmp_path, body="Fix the parser."), empty) == "the project is empty or nearly so"
    assert preview_reason(spec(tmp_path, body="Fix the parser."), full) is None
    build = spec(tmp_path, body="Build a command-line tool that tracks tasks.")
    assert preview_reason(build, full) == "it asks for a new program"
    assert preview_reason(spec(tmp_path, "complexity: high\n", "Fix it."), full) == "marked complexity: high"
    assert preview_reason(spec(tmp_path, "complexity: low\n", "Build a new app."), empty) is None
    text = task_layer(build, full, [], preview="it asks for a new program")
    assert "## Before your first change\n\nThis task is complex (it asks for a new program)" in text
    assert "Make your first tool calls in that same reply" in text


def test_the_state_keeps_blockers_and_answers(tmp_path: Path) -> None:
    store = TaskStore(tmp_path / "data", tmp_path / "project")
    task = tmp_path / "tasks" / "slugs" / "task.md"
    assert store.load(task) is None
    state = TaskState(str(task), "Slugs", str(tmp_path / "project"), status="blocked", session_id="s1")
    state.blockers.append(BlockerRecord("Which rule wins?", "ask_user", session_id="s1"))
    store.save(state)
    path = store.path_for(task)
    assert path.name.startswith("slugs-") and path.parent.parent == tmp_path / "data" / "tasks"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    loaded = store.load(task)
    assert loaded is not None and loaded.open_blocker is not None and loaded.clarifications == []
    loaded.answer("lowercase")
    assert loaded.open_blocker is None and [b.answer for b in loaded.clarifications] == ["lowercase"]
    store.save(loaded)
    assert store.find_by_session("s1") is not None and store.find_by_session("s2") is None
    assert json.loads(path.read_text())["blockers"][0]["answer"] == "lowercase"
    assert [s.title for s in store.list()] == ["Slugs"]


def test_a_broken_state_file_is_skipped_in_the_list_and_one_line_when_loaded(tmp_path: Path) -> None:
    import pytest

    from anvil.core.tasks.state import TaskStateError

    store = TaskStore(tmp_path / "data", tmp_path)
    task = tmp_path / "task.md"
    store.dir.mkdir(parents=True)
    store.path_for(task).write_text("{not json")
    assert store.list() == []
    with pytest.raises(TaskStateError, match="cannot be read"):
        store.load(task)

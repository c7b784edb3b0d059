"""Screenshots at fixed sizes, from fixed events (no timings, paths or ids that change between runs).

Update after an intended change with ``pytest tests/tui/test_snapshots.py --snapshot-update`` and look at
the SVGs in ``__snapshots__/`` before committing them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from anvil.core import events as ev
from anvil.tui.app import AnvilApp
from anvil.tui.approval import ApprovalScreen
from tests.tui.conftest import make_app, wait_for

ANSWER = """I found the bug: `count_words` only matches lower-case letters.

```python
words = re.findall(r"[a-z']+", text.lower())
```
"""
DIFF = "\n".join([
    "--- a/wordstat.py", "+++ b/wordstat.py", "@@ -7,5 +7,5 @@", " ", " ",  # blank context lines keep a space
    " def count_words(text):",
    "-    words = re.findall(r\"[a-z']+\", text)",
    "+    words = re.findall(r\"[a-z']+\", text.lower())",
    "     return Counter(words)", ""])
TODOS = (ev.TodoItem("Run the tests", "completed"),
         ev.TodoItem("Fix count_words", "in_progress", "Fixing count_words"),
         ev.TodoItem("Re-run the tests", "pending"))


def conversation() -> list[ev.Event]:
    edit_args = {"path": "wordstat.py", "old_string": "text)", "new_string": "text.lower())"}
    return [
        ev.TodosChanged(TODOS),
        ev.ToolCallStarted("c1", "run_command", {"command": "python -m pytest -q"}, "Running pytest"),
        ev.ToolResultEvent("c1", "run_command", False, "exit 1 · 0.4s",
                           "F..\nFAILED test_wordstat.py::test_counts_are_case_insensitive\n1 failed, 2 passed\n"
                           "[exit 1 · 0.4s]", duration=0.4),
        ev.TextDelta(ANSWER),
        ev.AssistantMessage(ANSWER),
        ev.ToolCallStarted("c2", "edit_file", edit_args, "Editing wordstat.py"),
        ev.ToolResultEvent("c2", "edit_file", True, "Edited wordstat.py (+1 -1)",
                           "Edited wordstat.py: 1 replacement at line 9.\n\n" + DIFF, diff=DIFF, duration=0.01),
        ev.ContextUsage(112_000, 184_000, 0.6087),
        ev.UsageReport(100, 10, 0.0123, 30_000, 900, 0.0123),
        ev.CompactionStarted(150_000, "threshold"),
        ev.CompactionFinished(150_000, 41_000, 2),
    ]


def scripted_app(project: Path) -> AnvilApp:
    (project / "wordstat.py").write_text("")
    # the sandbox off: the status bar then reads the same on machines with and without bubblewrap
    return make_app(project, [], sandbox={"mode": "off"})


async def replay(pilot: Pilot[Any], events: list[ev.Event], prompt: str = "Fix the failing test") -> None:
    app = pilot.app
    assert isinstance(app, AnvilApp)
    await wait_for(pilot, lambda: app.started)
    app.prompt.cursor_blink = False  # the cursor shown steadily: a blink must not decide the screenshot
    app.add_user(prompt)
    for event in events:
        await app.renderer.dispatch(event)
    await app.renderer.end_assistant()
    app.status.update_state(phase="")
    await pilot.pause()


@pytest.mark.parametrize("theme", ["anvil-dark", "anvil-light"])
def test_a_conversation(snap_compare: Any, project: Path, theme: str) -> None:
    app = scripted_app(project)

    async def run_before(pilot: Pilot[Any]) -> None:
        await replay(pilot, conversation())
        app.theme = theme
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)


def test_the_approval_modal(snap_compare: Any, project: Path) -> None:
    app = scripted_app(project)
    request = ev.ApprovalRequested("c9", "run_command", {"command": "rm -rf build && python -m pytest -q"},
                                   "Running rm -rf build", command="rm -rf build && python -m pytest -q",
                                   reasons=("deletes files recursively",),
                                   suggested_pattern="rm -rf build", cwd="/home/me/project")

    async def run_before(pilot: Pilot[Any]) -> None:
        await replay(pilot, [ev.ToolCallStarted("c9", "run_command", request.args, request.title)])
        app.push_screen(ApprovalScreen(request, Path("/home/me/project")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=(100, 30), run_before=run_before)


def test_a_narrow_terminal_shows_the_todo_summary(snap_compare: Any, project: Path) -> None:
    app = scripted_app(project)

    async def run_before(pilot: Pilot[Any]) -> None:
        await replay(pilot, [ev.TodosChanged(TODOS), ev.TextDelta("Working on it."),
                             ev.AssistantMessage("Working on it."), ev.ContextUsage(170_000, 184_000, 0.92)])

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)

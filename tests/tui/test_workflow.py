"""A phased job in the app, through Pilot: the phase in the status bar and as the sidebar's heading, a divider in
the transcript where each phase begins, and ``--workflow`` waiting for the job's instructions."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from anvil.frontend.jobs import JobLaunch
from anvil.tui.app import AnvilApp
from anvil.tui.phases import PhaseDivider
from anvil.tui.todos import TodoSidebar
from anvil.tui.transcript import LineEntry
from tests.support.frontend_scripts import PHASED_JOB as TURNS
from tests.tui.conftest import make_runtime, screen_text, submit, wait_for

SIZE = (130, 40)


def dividers(app: AnvilApp) -> list[PhaseDivider]:
    return list(app.transcript.query(PhaseDivider))


async def test_the_status_bar_shows_the_phase_and_a_divider_marks_each_transition(project: Path) -> None:
    runtime = make_runtime(project, TURNS, auto_approve=True)
    runtime.agent.model.delay = 0.05  # type: ignore[attr-defined]  # phase 1 lasts long enough to be seen
    app = AnvilApp(project, runtime=runtime, job=JobLaunch("phased", instructions="Tidy the project."))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.state.job == "phase 1 · strategic")
        assert "phase 1 · strategic" in screen_text(app)
        await wait_for(pilot, lambda: len(dividers(app)) == 2 and not app.busy)
        first, second = dividers(app)
        assert first.label == "Phase 1 · strategic" and first.text.startswith("Job ")
        assert (second.label, second.text) == ("Phase 2 · tactical", "Phase 2 · tactical: Fix. 5 todos loaded from "
                                                                    "todos.yaml.")
        assert app.status.state.job == "phase 2 · tactical"
        text = screen_text(app)
        assert "phase 2 · tactical" in text and "━ Phase 2 · tactical ━━━" in text
        title = app.query_one("#todos", TodoSidebar).query_one(".title", Static)
        assert str(title.render()) == "Phase 2 · tactical 1/5"
        lines = [e.text for e in app.transcript.query(LineEntry)]
        assert "Phase 1 (strategic) done: 5 todos checked in todos.yaml." in lines
        assert any(line.startswith("Job ") and "paused in phase 2 (tactical), todo 2 of 5" in line for line in lines)


async def test_without_instructions_the_first_message_starts_the_job(project: Path) -> None:
    app = AnvilApp(project, runtime=make_runtime(project, TURNS), job=JobLaunch("phased"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.started)
        lines = [e.text for e in app.transcript.query(LineEntry)]
        assert any(line.startswith("A phased job starts with your next message") for line in lines)
        assert app.status.state.job == ""
        await submit(pilot, "Tidy the project.")
        await wait_for(pilot, lambda: len(dividers(app)) == 2 and not app.busy)
        job = app.session.job if app.session else None
        assert job is not None and (job.job_dir / "instructions.md").read_text() == "Tidy the project.\n"
        await submit(pilot, "Go on with step 2.")  # a message to a paused job is guidance for it
        await wait_for(pilot, lambda: not app.busy)
        messages = app.runtime.agent.model.calls[-1]  # type: ignore[union-attr]
        assert any(str(m.get("content", "")).endswith("The person says:\nGo on with step 2.") for m in messages)

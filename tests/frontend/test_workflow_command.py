"""``/workflow``, and the phase lines every front end shows (anvil/frontend/jobs.py, anvil/frontend/lines.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.core.events import TodoItem
from anvil.core.job_events import JobFinished, PhaseEnded, PhaseStarted, TransitionRejected
from anvil.frontend.commands import COMMANDS, run_command
from anvil.frontend.effects import Render, Replace, RunEvents, Show
from anvil.frontend.lines import Line, describe
from tests.frontend.conftest import MakeSession, events_of
from tests.support.frontend_scripts import PHASED_JOB


async def run(line: str, session: Any) -> list[Any]:
    return await run_command(line, session=session, commands=COMMANDS, keys_help="KEYS")


async def test_workflow_starts_a_job_in_a_new_session_shows_it_and_stops_it(make_session: MakeSession,
                                                                           project: Path) -> None:
    old = make_session(PHASED_JOB)
    (project / "spec.md").write_text("Use tabs.\n")
    listing = await run("/workflow", old)
    assert listing[0].kind == "help" and listing[0].text.startswith("/workflow phased INSTRUCTIONS starts")
    assert await run("/workflow phased", old) == [
        Show("/workflow phased needs the job's instructions. " + listing[0].text)]
    reply = await run("/workflow phased Tidy the project. @spec.md", old)
    assert [type(effect) for effect in reply] == [Replace, Show, RunEvents]
    new = reply[0].session
    assert new.id != old.id and reply[1].text.endswith(f"the previous one is kept: /resume {old.id}")
    await events_of(reply[2].events)
    job = new.job
    assert job is not None and (job.phase, job.kind, job.status) == (2, "tactical", "paused")
    assert "Use tabs." in (job.job_dir / "instructions.md").read_text()  # @file attached to the instructions
    shown = (await run("/workflow", new))[0]
    assert shown.kind == "help" and shown.text.startswith(f"Job {job.job_id} (phased), paused, phase 2 · tactical: Fix")
    assert "  in_progress 2. step 2" in shown.text and f".anvil/jobs/{job.job_id}/" in shown.text
    stopped = await run("/workflow stop", new)
    assert isinstance(stopped[0], Render)
    assert [(e.status, e.summary) for e in stopped[0].events if isinstance(e, JobFinished)] == [
        ("stopped", "stopped by the person")]
    assert new.job is None and await run("/workflow stop", new) == [Show("This session has no job to stop.")]
    assert f"Jobs in this project, newest first: {job.job_id}." in (await run("/workflow", new))[0].text
    await new.close()


async def test_an_unknown_workflow_is_one_error_line_and_keeps_the_session(make_session: MakeSession) -> None:
    session = make_session()
    assert await run("/workflow kanban Write tests", session) == [
        Show("There is no workflow called 'kanban'; the workflows are: phased, tdd.", "error")]
    assert session.job is None


def test_the_phase_lines_every_front_end_shows() -> None:
    todos = (TodoItem("1. a", "completed"), TodoItem("2. b", "in_progress"))
    assert describe(PhaseStarted("phased", "J", ".anvil/jobs/J", 1, "strategic", todos=todos)) == Line(
        "phase", "Job J started: Phase 1 · strategic, 2 todos (files in .anvil/jobs/J/).")
    assert describe(PhaseStarted("phased", "J", ".anvil/jobs/J", 4, "tactical", "Parser", todos,
                                 "6 todos loaded from todos.yaml.")) == Line(
        "phase", "Phase 4 · tactical: Parser. 6 todos loaded from todos.yaml.")
    assert describe(PhaseStarted("phased", "J", ".anvil/jobs/J", 4, "tactical", "", todos, resumed=True)) == Line(
        "phase", "Job J resumed in Phase 4 · tactical (1/2 todos done; files in .anvil/jobs/J/).")
    assert describe(PhaseEnded("phased", "J", 4, "tactical", "archive/phase_4.yaml", "6 todos archived to "
                               "archive/phase_4.yaml")) == Line(
        "phase", "Phase 4 (tactical) done: 6 todos archived to archive/phase_4.yaml.")
    assert describe(TransitionRejected("phased", "J", 3, "strategic", "todos.yaml is empty.")) == Line(
        "notice", "Phase 3 cannot end yet: todos.yaml is empty.")
    assert describe(JobFinished("phased", "J", ".anvil/jobs/J", "complete", 5, "Done.")) == Line(
        "phase", "Job J complete after 5 phases (.anvil/jobs/J/): Done.")
    assert describe(JobFinished("phased", "J", ".anvil/jobs/J", "budget", 30, "the job reached its budget")) == Line(
        "error", "Job J stopped after 30 phases: the job reached its budget")

"""``/workflow tdd`` and ``/workflow clear`` (anvil/frontend/jobs.py), as every interactive front end runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.core.job_events import JobStateChanged
from anvil.frontend.commands import COMMANDS, run_command
from anvil.frontend.effects import Replace, RunEvents, Show
from anvil.frontend.jobs import JobLaunch, starts_at_once
from tests.frontend.conftest import MakeSession, events_of
from tests.support.tdd import tdd_repo


async def run(line: str, session: Any) -> list[Any]:
    return await run_command(line, session=session, commands=COMMANDS, keys_help="KEYS")


async def test_a_tdd_job_starts_with_or_without_notes_and_clear_says_what_is_in_the_way(
        make_session: MakeSession, project: Path) -> None:
    tdd_repo(project)
    old = make_session([{"tool_calls": [{"name": "get_task", "arguments": {}}]}] + [{"text": "Later."}] * 4)
    assert await run("/workflow clear", old) == [Show("This session has no job. `anvil --workflow tdd --clear-halt` "
                                                      "clears the halt of the project's newest TDD job.", "error")]
    reply = await run("/workflow tdd Keep functions small.", old)
    assert [type(effect) for effect in reply] == [Replace, Show, RunEvents]
    new = reply[0].session
    events = await events_of(reply[2].events)
    assert not [e for e in events if isinstance(e, JobStateChanged)]  # the plan is not written yet
    job = new.job
    assert job is not None and (job.workflow, job.phase, job.kind, job.status) == ("tdd", 1, "INITIALIZING", "paused")
    assert (job.job_dir / "instructions.md").read_text() == "Keep functions small.\n"
    assert "## The person's notes for this job\n\nKeep functions small." in new.runtime.agent.messages[0]["content"]
    shown = (await run("/workflow", new))[0]
    assert shown.text.startswith(f"Job {job.job_id} (tdd), paused, phase 1 · INITIALIZING\n")
    assert f".anvil/jobs/{job.job_id}/ (ACTIVE_PR.json, ORCHESTRATION_STATE.json, instructions.md)." in shown.text
    assert await run("/workflow clear", new) == [
        Show(f"Job {job.job_id} is not halted (it is in INITIALIZING); there is nothing to clear.", "error")]
    third = make_session()
    started = await run("/workflow tdd", third)  # no notes: the plan is the job's instructions
    assert [type(effect) for effect in started] == [Replace, Show, RunEvents]
    assert not (started[0].session.job.job_dir / "instructions.md").exists()
    await started[0].session.close()
    assert (await run("/workflow", old))[0].text.count("/workflow tdd [NOTES] starts a TDD job") == 1


async def test_a_tdd_job_that_cannot_start_is_one_line_and_starts_at_once_from_the_command_line(
        make_session: MakeSession) -> None:
    session = make_session()
    reply = await run("/workflow tdd", session)
    assert len(reply) == 1 and reply[0].kind == "error"
    assert "is not a git repository, and the TDD workflow works on branches" in reply[0].text
    assert starts_at_once(JobLaunch("tdd")) and not starts_at_once(JobLaunch("phased"))
    assert starts_at_once(JobLaunch("phased", "Do it."))

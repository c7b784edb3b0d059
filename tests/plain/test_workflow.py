"""A phased job in `anvil --plain`: the phases as lines, the phase in the bottom toolbar, the first message as the
job's instructions."""

from __future__ import annotations

import asyncio
from typing import Any

from anvil.frontend.jobs import JobLaunch
from tests.support.frontend_scripts import PHASED_JOB as TURNS


async def test_a_job_prints_its_phases_and_the_toolbar_shows_the_phase(make_repl: Any) -> None:
    repl = make_repl(TURNS, start=False)
    repl.repl.job = JobLaunch("phased")
    repl.task = asyncio.create_task(repl.repl.run())
    await repl.wait("ℹ A phased job starts with your next message")
    assert "phase 1" not in "".join(text for _, text, *_ in repl.repl._toolbar())
    await repl.prompt("Tidy the project.")
    await repl.wait("── Job ")
    await repl.wait("── Phase 1 (strategic) done: 5 todos checked in todos.yaml.")
    await repl.wait("── Phase 2 · tactical: Fix. 5 todos loaded from todos.yaml.")
    await repl.wait("paused in phase 2 (tactical), todo 2 of 5")
    await repl.idle()
    toolbar = "".join(text for _, text, *_ in repl.repl._toolbar())
    assert " · phase 2 · tactical" in toolbar
    job = repl.repl.session.job
    assert job is not None and (job.job_dir / "instructions.md").read_text() == "Tidy the project.\n"
    assert await repl.exit() == 0

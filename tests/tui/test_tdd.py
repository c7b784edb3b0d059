"""A TDD job in the app, through Pilot: ``--workflow tdd`` starts at once, the state in the status bar, git and state
lines in the transcript, an escalation's report there, and the person's next message as its guidance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anvil.frontend.jobs import JobLaunch
from anvil.tui.app import AnvilApp
from anvil.tui.transcript import LineEntry
from tests.support.tdd import GREET, TEST_GREET, active_pr, call, submit, tdd_repo, write_pr_anywhere
from tests.tui.conftest import make_runtime, screen_text, wait_for
from tests.tui.conftest import submit as type_message

SIZE = (130, 40)
REPORT = "# Stuck on greet\n\ngreet returns 'Hi'; the test wants 'Hello, Ann!'."


def turns() -> list[dict[str, Any]]:
    def step(*calls: dict[str, Any]) -> dict[str, Any]:
        return {"tool_calls": list(calls)}

    return [step(call("get_task")), step(write_pr_anywhere(active_pr(("Greeting", ("RED", "GREEN"))))),
            step(submit(summary="planned")), step(call("get_task")),
            step(call("write_file", path="test_greet.py", content=TEST_GREET)), step(submit("FAIL")),
            step(submit(summary="right reason", analysis_decision="SUCCESS")), step(call("get_task")),
            step(call("write_file", path="greet.py", content="def greet(name):\n    return 'Hi'\n")),
            step(submit("PASS")), step(call("escalate_for_external_help", markdown_report=REPORT)),
            # after the person's guidance
            step(call("get_task")), step(call("read_file", path="greet.py")),
            step(call("write_file", path="greet.py", content=GREET)), step(submit("PASS")), {"text": "Done."}]


async def test_an_escalation_waits_in_the_transcript_and_the_next_message_is_its_guidance(project: Path) -> None:
    tdd_repo(project)
    runtime = make_runtime(project, turns(), auto_approve=True,
                           workflows={"tdd": {"preflight": [], "scope_reduction_after": 1, "escalate_after": 1}})
    app = AnvilApp(project, runtime=runtime, job=JobLaunch("tdd"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.status.state.job == "phase 1 · DEBUGGING" and not app.busy)
        lines = [e.text for e in app.transcript.query(LineEntry)]
        assert "$ git checkout -b feat/add-greeting" in lines and "EXECUTING_TDD → DEBUGGING" in lines
        report = next(line for line in lines if line.startswith("The model asks for your help"))
        assert REPORT in report
        assert any(line.startswith(f"Job {app.session.job.job_id} needs you") for line in lines)  # type: ignore[union-attr]
        assert "phase 1 · DEBUGGING" in screen_text(app)
        await type_message(pilot, "Return an f-string with the name.")
        await wait_for(pilot, lambda: app.status.state.job == "phase 1 · EXECUTING_TDD" and not app.busy)
        calls = app.runtime.agent.model.calls  # type: ignore[union-attr]
        resumed = next(c for c in calls if str(c[-1].get("content", "")).startswith("[anvil] The person answered"))
        assert "Return an f-string with the name." in resumed[-1]["content"]

"""TDD jobs from the command line, as a person runs them: ``anvil -p --workflow tdd --auto-approve`` on a fresh
repository takes a PR from the plan to main; an escalation exits 3 with the model's report on stdout and ``-c`` goes
on with the person's guidance; ``--clear-halt``; and the repository problems that keep a job from starting."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import anvil_command
from tests.support.openai_server import ScriptedOpenAIServer
from tests.support.tdd import (
    GREET,
    PLAN_PATH,
    PREFLIGHT,
    TEST_GREET,
    active_pr,
    call,
    git,
    mark_plan_done,
    reply,
    submit,
    tdd_repo,
    write_pr_anywhere,
)

PR = active_pr(("Greeting", ("RED", "GREEN")))


def anvil(project: Path, server: ScriptedOpenAIServer | None, *args: str) -> subprocess.CompletedProcess[str]:
    base = ["--model", "openai/scripted", "--api-base", server.url] if server else ["--model", "scripted"]
    return subprocess.run(anvil_command(*args, *base), cwd=project, capture_output=True, text=True, timeout=180)


def configured(**tdd: Any) -> None:
    """The person's [workflows.tdd], in their user configuration (a project's own would need trust)."""
    lines = [f"preflight = [{json.dumps(PREFLIGHT)}]", *(f"{key} = {json.dumps(value)}" for key, value in tdd.items())]
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "anvil" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[workflows.tdd]\n" + "\n".join(lines) + "\n")


def red_to_green() -> list[dict[str, Any]]:
    return [reply(call("get_task")), reply(write_pr_anywhere(PR)), reply(submit(summary="planned")),
            reply(call("get_task")), reply(call("write_file", path="test_greet.py", content=TEST_GREET)),
            reply(submit("FAIL")), reply(submit(summary="right reason", analysis_decision="SUCCESS")),
            reply(call("get_task"))]


def test_a_scripted_pr_goes_from_the_plan_to_main_headless(project: Path, server: ScriptedOpenAIServer) -> None:
    tdd_repo(project)
    configured()
    server.add(*red_to_green(),
               reply(call("write_file", path="greet.py", content=GREET)), reply(submit("PASS")),
               reply(call("get_task")), reply(call("run_command", command="git add -A && git commit -qm checkpoint")),
               reply(submit(summary="committed")), reply(call("get_task")), reply(call("report_review", findings=[])),
               reply(call("run_command", command="git reset --soft main && git commit -qm 'feat: Add greeting'")),
               reply(submit(summary="squashed")), reply(call("get_task")), reply(mark_plan_done()),
               reply(submit(summary="plan marked")), reply(call("get_task")), reply(call("get_task")),
               reply(submit(summary="All PRs are done.", plan_complete=True)))
    result = anvil(project, server, "-p", "--workflow", "tdd", "--auto-approve")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Every PR of the master plan is done. This job merged: feat: Add greeting.\n"
    lines = result.stderr.splitlines()
    assert "anvil: $ git checkout -b feat/add-greeting" in lines
    assert "anvil: CODE_REVIEW → AWAITING_FINALIZATION" in lines
    assert ("anvil: $ git merge --no-ff --no-gpg-sign -m 'Merge feat/add-greeting: feat: Add greeting' "
            "feat/add-greeting") in lines
    assert "anvil: $ git branch -d feat/add-greeting" in lines
    assert git(project, "branch", "--format=%(refname:short)") == "main"
    assert git(project, "log", "-1", "--format=%s") == "Merge feat/add-greeting: feat: Add greeting"
    assert "## [DONE] PR 1: feat: Add greeting (" in (project / PLAN_PATH).read_text()
    assert git(project, "status", "--porcelain") == ""  # the job's files are ignored by git


REPORT = "# Stuck\n\ngreet keeps returning 'Hi'."


def test_an_escalation_exits_3_with_the_report_and_c_goes_on_with_the_guidance(
        project: Path, server: ScriptedOpenAIServer) -> None:
    tdd_repo(project)
    configured(scope_reduction_after=1, escalate_after=1)
    wrong = "def greet(name):\n    return 'Hi'\n"
    server.add(*red_to_green(), reply(call("write_file", path="greet.py", content=wrong)),
               reply(submit("PASS")), reply(call("escalate_for_external_help", markdown_report=REPORT)))
    result = anvil(project, server, "-p", "--workflow", "tdd", "--auto-approve")
    assert result.returncode == 3, result.stderr
    assert result.stdout == REPORT + "\n"
    assert "needs you: the model escalated (its report is above). Your next message is its guidance" in result.stderr
    assert REPORT not in result.stderr  # stdout has it
    job = next((project / ".anvil" / "jobs").iterdir())
    assert json.loads((job / "ORCHESTRATION_STATE.json").read_text())["escalation"] == REPORT

    asked = len(server.requests)
    server.add(reply(call("get_task")), *[{"text": "Waiting."}] * 4)
    again = anvil(project, server, "-p", "-c", "--auto-approve", "Return an f-string.")
    assert again.returncode == 1, again.stderr  # the job paused again, unfinished
    first = server.requests[asked]["messages"][-1]["content"]
    assert first.startswith("[anvil] The person answered your escalation:\nReturn an f-string.")


def test_clear_halt_from_the_shell_and_what_keeps_a_job_from_starting(project: Path) -> None:
    (project / "dirty.txt").write_text("x")
    cases = [
        (["--workflow", "tdd", "--clear-halt"], 1, "There is no tdd job in"),
        (["--clear-halt"], 2, "--clear-halt goes with --workflow NAME"),
        (["-p", "x", "--workflow", "tdd", "--clear-halt"], 2, "--clear-halt only clears the halt and exits"),
        (["-p", "--workflow", "tdd"], 1, "is not a git repository, and the TDD workflow works on branches"),
    ]
    for args, code, message in cases:
        result = anvil(project, None, *args)
        assert result.returncode == code, (args, result.stderr)
        assert code == 2 or result.stderr.count("\n") == 1, result.stderr  # argparse adds its usage line
        assert message in result.stderr, (args, result.stderr)
    tdd_repo(project)  # commits dirty.txt too
    (project / "dirty.txt").write_text("changed")
    result = anvil(project, None, "-p", "--workflow", "tdd")
    assert result.returncode == 1 and "uncommitted changes (dirty.txt); a TDD job starts from a clean tree" in \
        result.stderr
    git(project, "checkout", "dirty.txt")
    (project / PLAN_PATH).unlink()
    git(project, "commit", "-qam", "no plan")
    result = anvil(project, None, "-p", "--workflow", "tdd")
    assert result.returncode == 1 and f"There is no master plan at {PLAN_PATH}" in result.stderr
    assert not (project / ".anvil" / "jobs").exists() or not list((project / ".anvil" / "jobs").iterdir())


def test_clear_halt_clears_a_halted_job_and_refuses_one_that_is_not(project: Path) -> None:
    tdd_repo(project)
    jobs = project / ".anvil" / "jobs"
    job = jobs / "20250101-000000-abcd"
    job.mkdir(parents=True)
    (job / ".gitignore").write_text("*\n")
    state = {"status": "EXECUTING_TDD", "main_branch": "main"}
    (job / "ORCHESTRATION_STATE.json").write_text(json.dumps(state))
    result = anvil(project, None, "--workflow", "tdd", "--clear-halt")
    assert result.returncode == 1
    assert result.stderr == ("anvil: Job 20250101-000000-abcd is not halted (it is in EXECUTING_TDD); there is nothing "
                             "to clear.\n")
    state.update(status="HALTED", halt={"kind": "git", "message": "pull failed", "resume_at": "CREATING_BRANCH"})
    (job / "ORCHESTRATION_STATE.json").write_text(json.dumps(state))
    result = anvil(project, None, "--workflow", "tdd", "--clear-halt", "--resume", job.name)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Job {job.name}: the halt is cleared; it goes on in CREATING_BRANCH (PR 1).")
    assert json.loads((job / "ORCHESTRATION_STATE.json").read_text())["status"] == "CREATING_BRANCH"
    (job / "ORCHESTRATION_STATE.json").write_text('{"status": "HALTED"}')
    result = anvil(project, None, "--workflow", "tdd", "--clear-halt", "--resume", job.name)
    assert result.returncode == 1 and "main_branch: missing (required)" in result.stderr

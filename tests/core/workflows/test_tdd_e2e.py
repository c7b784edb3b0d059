"""TDD jobs end to end on temporary git repositories, through litellm's real path to the scripted OpenAI-compatible
server (the main agent and the review sub-agent alike): a two-step PR from the plan to its merge, a GREEN step that
fails and is debugged, a scope reduction, an escalation answered by the person, and a merge conflict that halts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from anvil.config import Settings
from anvil.core.events import Event, Notice, ToolResultEvent, TurnEnded
from anvil.core.job_events import GitOperation, JobFinished, JobStateChanged, PhaseStarted
from anvil.core.workflows.base import JobError
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime
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
)


def session_for(project: Path, server: ScriptedOpenAIServer, **tdd: Any) -> SessionFacade:
    settings = Settings(model="openai/scripted", api_base=server.url, auto_approve=True,
                        workflows={"tdd": {"preflight": [PREFLIGHT], **tdd}})
    return SessionFacade(open_runtime(settings, project, interactive=False))


async def collect(stream: Any) -> list[Event]:
    return [event async for event in stream]


def results(events: list[Event], name: str) -> list[ToolResultEvent]:
    return [e for e in events if isinstance(e, ToolResultEvent) and e.name == name]


def statuses(events: list[Event]) -> list[str]:
    """submit_work's answers, by status."""
    return [json.loads(e.output)["status"] for e in results(events, "submit_work")]


def moves(events: list[Event]) -> list[tuple[str, str]]:
    return [(e.old, e.new) for e in events if isinstance(e, JobStateChanged)]


def start(project: Path, server: ScriptedOpenAIServer, **tdd: Any) -> tuple[SessionFacade, Any, str]:
    tdd_repo(project)
    session = session_for(project, server, **tdd)
    stream = session.start_job("tdd", "")
    assert session.job is not None
    return session, stream, session.job.job_dir.relative_to(project).as_posix()


def plan_and_red(job: str, pr: str) -> list[dict[str, Any]]:
    """INITIALIZING → CREATING_BRANCH → EXECUTING_TDD, and the first task's RED step done."""
    return [reply(call("get_task")),
            reply(call("write_file", path=f"{job}/ACTIVE_PR.json", content=pr)),
            reply(submit(summary="ACTIVE_PR.json written")),
            reply(call("get_task")),
            reply(call("write_file", path="test_greet.py", content=TEST_GREET)),
            reply(submit("FAIL")),
            reply(submit(summary="It fails because greet does not exist yet.", analysis_decision="SUCCESS")),
            reply(call("get_task"))]


def checkpoint() -> list[dict[str, Any]]:
    return [reply(call("get_task")), reply(call("run_command", command="git add -A && git commit -q -m checkpoint")),
            reply(submit(summary="committed"))]


FINDING = {"title": "greet has no docstring", "detail": "Say what it returns.", "file": "greet.py", "line": 1}
DOCUMENTED = 'def greet(name):\n    """The greeting for NAME."""\n    return f\'Hello, {name}!\'\n'


async def test_a_two_step_pr_goes_from_the_plan_to_main(project: Path, server: ScriptedOpenAIServer) -> None:
    session, stream, job = start(project, server)
    job_id = job.rsplit("/", 1)[1]
    server.add(
        *plan_and_red(job, active_pr(("Greeting", ("RED", "GREEN")))),
        reply(call("write_file", path="greet.py", content=GREET)),
        reply(submit("PASS")),
        *checkpoint(),
        reply(call("get_task")),  # → CODE_REVIEW: the review sub-agent runs
        reply(call("report_review", findings=[FINDING])),  # review round 1 (the sub-agent)
        reply(call("read_file", path="greet.py")),
        reply(call("write_file", path="greet.py", content=DOCUMENTED)),
        reply(submit("PASS")),
        *checkpoint(),
        reply(call("get_task")),  # → a fresh review
        reply(call("report_review", findings=[])),  # review round 2: approved
        reply(call("run_command", command="git reset --soft main && git commit -q -m 'feat: Add greeting'")),
        reply(submit(summary="squashed")),
        reply(call("get_task")),
        reply(mark_plan_done()),
        reply(submit(summary="plan marked")),
        reply(call("get_task")),  # merge; a new conversation for the next PR
        reply(call("get_task")),
        reply(submit(summary="Every PR is [DONE].", plan_complete=True)),
    )
    events = await collect(stream)
    await session.close()

    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.reason == "done", ended
    assert [(e.status, e.phases) for e in events if isinstance(e, JobFinished)] == [("complete", 1)]
    assert moves(events) == [
        ("INITIALIZING", "CREATING_BRANCH"), ("CREATING_BRANCH", "EXECUTING_TDD"),
        ("EXECUTING_TDD", "CODE_REVIEW"), ("CODE_REVIEW", "EXECUTING_TDD"),  # one finding
        ("EXECUTING_TDD", "CODE_REVIEW"), ("CODE_REVIEW", "AWAITING_FINALIZATION"),  # a clean review
        ("AWAITING_FINALIZATION", "FINALIZE_COMPLETE"), ("FINALIZE_COMPLETE", "PLAN_UPDATED"),
        ("PLAN_UPDATED", "MERGING_BRANCH"), ("MERGING_BRANCH", "INITIALIZING")]
    assert statuses(events) == ["SUCCESS", "NEEDS_ANALYSIS", "SUCCESS", "SUCCESS", "SUCCESS", "SUCCESS", "SUCCESS",
                                "SUCCESS", "SUCCESS", "SUCCESS"]
    submitted = results(events, "submit_work")
    assert "ModuleNotFoundError: No module named 'greet'" in json.loads(submitted[1].output)["output"]
    assert f"the preflight gate ({PREFLIGHT})" in json.loads(submitted[3].output)["output"]
    assert json.loads(submitted[4].output)["output"].startswith("Checkpoint ")  # the checkpoint commit, recorded
    assert [(e.phase, e.kind) for e in events if isinstance(e, PhaseStarted)] == [(1, "INITIALIZING"),
                                                                                 (2, "INITIALIZING")]

    # the git the orchestrator ran: branch, squash check, the plan's commit, the merge, the branch deleted
    ran = [e.command for e in events if isinstance(e, GitOperation)]
    for command in ("git checkout -b feat/add-greeting", "git rev-list --count main..HEAD",
                    "git merge --no-ff --no-gpg-sign -m 'Merge feat/add-greeting: feat: Add greeting' "
                    "feat/add-greeting",
                    "git branch -d feat/add-greeting"):
        assert command in ran, command
    assert not any(" push" in command or " -D" in command or "--force" in command for command in ran)
    squash_check = [e for e in events if isinstance(e, GitOperation) and e.command.startswith("git rev-list")][-1]
    assert squash_check.output == "1"

    # the repository: one merge of the squashed commit and the plan's update; the branch is gone
    assert git(project, "branch", "--format=%(refname:short)") == "main"
    assert git(project, "status", "--porcelain") == ""
    merged = git(project, "log", "--format=%s", "main^2", "-2").splitlines()
    assert merged == ['docs: mark "feat: Add greeting" done in the plan', "feat: Add greeting"]
    squashed = git(project, "rev-parse", "--short=12", "main^2^")
    assert f"## [DONE] PR 1: feat: Add greeting ({squashed})" in (project / PLAN_PATH).read_text()
    assert (project / "greet.py").read_text() == DOCUMENTED

    # the job's files: the plan of the PR gone, the state back at INITIALIZING, then complete
    job_dir = project / job
    assert not (job_dir / "ACTIVE_PR.json").exists()
    state = json.loads((job_dir / "ORCHESTRATION_STATE.json").read_text())
    assert (state["status"], state["job_status"], state["pr_number"], state["merged"]) == (
        "INITIALIZING", "complete", 2, ["feat: Add greeting"])

    # what the model was offered and told
    requests = server.requests
    first = requests[0]
    offered = {tool["function"]["name"] for tool in first["tools"]}
    assert {"get_task", "submit_work", "request_scope_reduction", "escalate_for_external_help", "run_command",
            "read_file", "write_file"} <= offered
    assert not offered & {"run_tests", "task", "todo_write", "report_review"}
    assert f"# TDD job {job_id}: PR 1 of the master plan ({PLAN_PATH})" in first["messages"][0]["content"]
    reviews = [r for r in requests if "report_review" in {t["function"]["name"] for t in r.get("tools", [])}]
    assert len(reviews) == 2
    reviewer_tools = {tool["function"]["name"] for tool in reviews[0]["tools"]}
    assert reviewer_tools == {"read_file", "grep", "glob", "list_files", "report_review"}  # read-only
    prompt = reviews[0]["messages"][-1]["content"]
    assert "+def greet(name):" in prompt and '"prTitle": "feat: Add greeting"' in prompt
    fresh = [i for i, r in enumerate(requests) if [m["role"] for m in r["messages"]] == ["system", "user"]
             and r not in reviews]
    assert len(fresh) == 2  # the job's start, and the next PR after the merge
    assert requests[fresh[1]]["messages"][1]["content"].startswith("Merged feat/add-greeting into main")
    review_task = next(e.output for e in results(events, "get_task")
                       if "Review 1.1: greet has no docstring" in e.output)
    assert "(greet.py:1)" in review_task


def first_request_of_each_conversation(server: ScriptedOpenAIServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if [m["role"] for m in r["messages"]][:2] == ["system", "user"]
            and len(r["messages"]) <= 3]


WRONG = "def greet(name):\n    return 'Hi'\n"
STOP = [{"text": "Stopping here."}] * 4  # a reply without a tool call, then the job's three reminders


async def test_a_failing_green_step_is_debugged_and_the_next_task_starts_afresh(
        project: Path, server: ScriptedOpenAIServer) -> None:
    session, stream, job = start(project, server)
    server.add(
        *plan_and_red(job, active_pr(("Greeting", ("RED", "GREEN")), ("Farewell", ("RED",)))),
        reply(call("write_file", path="greet.py", content=WRONG)),
        reply(submit("PASS")),  # fails: DEBUGGING
        reply(call("get_task")),
        reply(call("run_command", command="python3 -m pytest -q test_greet.py")),  # refused: tests go through submit
        reply(call("run_tests")),  # not offered
        reply(call("request_scope_reduction")),  # locked
        reply(call("read_file", path="greet.py")),
        reply(call("write_file", path="greet.py", content=GREET)),
        reply(submit("PASS")),
        *checkpoint(),  # the first task is done: the second starts in a fresh conversation
        reply(call("get_task")),
        *STOP,
    )
    events = await collect(stream)
    await session.close()
    assert ("EXECUTING_TDD", "DEBUGGING") in moves(events) and ("DEBUGGING", "EXECUTING_TDD") in moves(events)
    failed = json.loads(results(events, "submit_work")[3].output)
    assert failed["status"] == "FAILURE" and "AssertionError: Hi" in failed["output"]
    briefing = results(events, "get_task")[3].output
    assert briefing.startswith("Your previous submission failed. Your new primary goal is to fix the bug on task "
                               "\"Greeting\" (failed attempts: 1).")
    assert "Form one hypothesis" in briefing and "AssertionError: Hi" in briefing
    refused = results(events, "run_command")[0]
    assert not refused.ok and refused.output.startswith("Not run: `python3 -m pytest -q test_greet.py` runs tests")
    assert "submit_work" in refused.output
    assert results(events, "run_tests")[0].output.startswith("run_tests is not offered in a TDD job")
    locked = results(events, "request_scope_reduction")[0]
    assert not locked.ok and "there have been 1; 5 more to go" in locked.output
    assert json.loads(results(events, "submit_work")[4].output)["status"] == "SUCCESS"
    fresh = first_request_of_each_conversation(server)
    assert len(fresh) == 2 and fresh[1]["messages"][1]["content"].startswith('Task "Greeting" is done and committed')
    assert "Task 2: Farewell" in results(events, "get_task")[-1].output
    state = json.loads((project / job / "ORCHESTRATION_STATE.json").read_text())
    assert (state["status"], state["debug_attempt_counter"], state["job_status"]) == ("EXECUTING_TDD", 0, "paused")
    assert "last_error" not in state
    assert [e.message for e in events if isinstance(e, Notice)][-1].startswith(
        f"Job {job.rsplit('/', 1)[1]} paused at PR 1 (EXECUTING_TDD).")


def replanned(with_history: bool) -> str:
    pr = json.loads(active_pr(("Greeting 1a: the function", ("RED", "GREEN")),
                              ("Greeting 1b (Verification): the original goal", ("RED", "GREEN"))))
    if with_history:
        pr["tasks"][0]["breakdownHistory"] = {"originalTaskName": "Greeting", "justification": "Smaller steps."}
    return json.dumps(pr)


async def test_a_scope_reduction_reverts_the_attempt_and_the_new_plan_ends_with_verification(
        project: Path, server: ScriptedOpenAIServer) -> None:
    session, stream, job = start(project, server, scope_reduction_after=2, escalate_after=4)
    server.add(
        *plan_and_red(job, active_pr(("Greeting", ("RED", "GREEN")))),
        reply(call("write_file", path="greet.py", content=WRONG),
              call("run_command", command="echo scratch >> README.md && echo x > notes.txt")),
        reply(submit("PASS")),  # 1
        reply(call("request_scope_reduction")),  # locked: one more to go
        reply(submit("PASS")),  # 2
        reply(call("request_scope_reduction")),  # reverted; REPLANNING in a fresh conversation
        reply(call("get_task")),
        reply(call("read_file", path=f"{job}/ACTIVE_PR.json")),
        reply(call("write_file", path=f"{job}/ACTIVE_PR.json", content=replanned(with_history=False))),
        reply(submit(summary="re-planned")),  # rejected: no breakdownHistory
        reply(call("read_file", path=f"{job}/ACTIVE_PR.json")),
        reply(call("write_file", path=f"{job}/ACTIVE_PR.json", content=replanned(with_history=True))),
        reply(submit(summary="re-planned")),
        reply(call("get_task")),
        *STOP,
    )
    events = await collect(stream)
    await session.close()
    assert moves(events)[-3:] == [("EXECUTING_TDD", "DEBUGGING"), ("DEBUGGING", "REPLANNING"),
                                  ("REPLANNING", "EXECUTING_TDD")]
    ran = [e.command for e in events if isinstance(e, GitOperation)]
    assert ran.index("git reset --hard HEAD") < ran.index("git clean -fd")
    # the attempt is gone: the tracked change, and the files it created (the RED test had no checkpoint either)
    assert (project / "README.md").read_text() == "# Demo\n\nA tiny project.\n"
    assert not (project / "notes.txt").exists() and not (project / "greet.py").exists()
    assert git(project, "status", "--porcelain") == "" and (project / job / "ACTIVE_PR.json").exists()
    reduced = results(events, "request_scope_reduction")
    assert [r.ok for r in reduced] == [False, True] and "1 more to go" in reduced[0].output
    instruction = results(events, "get_task")[-2].output
    assert 'Analyse the original goal, task "Greeting"' in instruction and "AssertionError: Hi" in instruction
    assert "must be a verification task" in instruction
    fresh = first_request_of_each_conversation(server)
    assert fresh[-1]["messages"][1]["content"].startswith("Your changes since the last checkpoint were reverted")
    rejected = json.loads(results(events, "submit_work")[-2].output)
    assert rejected["status"] == "FAILURE" and "needs breakdownHistory with originalTaskName" in rejected["output"]
    accepted = json.loads(results(events, "submit_work")[-1].output)
    assert accepted["output"].startswith("The new plan is accepted: 2 tasks replace the failed one")
    assert "Task 1: Greeting 1a: the function" in results(events, "get_task")[-1].output
    state = json.loads((project / job / "ORCHESTRATION_STATE.json").read_text())
    assert state["replanned_tasks"] == ["Greeting 1a: the function", "Greeting 1b (Verification): the original goal"]
    assert (state["status"], state["debug_attempt_counter"]) == ("EXECUTING_TDD", 0) and "replan" not in state


REPORT = "# Stuck on greet\n\nThe test expects 'Hello, Ann!'; every attempt returns 'Hi'. I tried ..."


async def test_an_escalation_stops_the_job_and_the_persons_guidance_resumes_it(
        project: Path, server: ScriptedOpenAIServer) -> None:
    session, stream, job = start(project, server, scope_reduction_after=2, escalate_after=2)
    server.add(
        *plan_and_red(job, active_pr(("Greeting", ("RED", "GREEN")))),
        reply(call("write_file", path="greet.py", content=WRONG)),
        reply(submit("PASS")),  # 1
        reply(call("escalate_for_external_help", markdown_report=REPORT)),  # locked
        reply(submit("PASS")),  # 2
        reply(call("escalate_for_external_help", markdown_report=REPORT), call("get_task")),  # the job stops here
    )
    events = await collect(stream)
    escalations = [e for e in events if isinstance(e, JobStateChanged) and e.waiting]
    assert [(e.waiting, e.detail, e.new) for e in escalations] == [("escalated", REPORT, "DEBUGGING")]
    locked = results(events, "escalate_for_external_help")[0]
    assert not locked.ok and "there have been 1; 1 more to go" in locked.output
    ended = events[-1]
    assert isinstance(ended, TurnEnded) and ended.reason == "done"
    assert ended.message.startswith(f"Job {job.rsplit('/', 1)[1]} needs you: the model escalated")
    assert len(results(events, "get_task")) == 3  # the call after the escalation never ran
    assert session.job is not None and session.job.status == "paused"
    asked = len(server.requests)

    server.add(reply(call("get_task")), reply(call("read_file", path="greet.py")),
               reply(call("write_file", path="greet.py", content=GREET)), reply(submit("PASS")), *STOP)
    events = await collect(session.submit("Return an f-string with the name."))
    await session.close()
    resumed = server.requests[asked]["messages"]
    assert resumed[-1]["content"].startswith("[anvil] The person answered your escalation:\nReturn an f-string with "
                                             "the name.")
    briefing = results(events, "get_task")[0].output
    assert "The person's guidance (after your escalation):\nReturn an f-string with the name." in briefing
    assert "Strategy: Follow the person's guidance" in briefing  # not "escalate" again
    assert json.loads(results(events, "submit_work")[0].output)["status"] == "SUCCESS"
    state = json.loads((project / job / "ORCHESTRATION_STATE.json").read_text())
    assert state["status"] == "EXECUTING_TDD" and "escalation" not in state and "guidance" not in state


def to_plan_updated(job: str) -> list[dict[str, Any]]:
    """A one-task PR from the plan to PLAN_UPDATED: written, reviewed, squashed, the plan marked."""
    return [*plan_and_red(job, active_pr(("Greeting", ("RED", "GREEN")))),
            reply(call("write_file", path="greet.py", content=GREET)), reply(submit("PASS")), *checkpoint(),
            reply(call("get_task")), reply(call("report_review", findings=[])),
            reply(call("run_command", command="git reset --soft main && git commit -q -m 'feat: Add greeting'")),
            reply(submit(summary="squashed")), reply(call("get_task")), reply(mark_plan_done()),
            reply(submit(summary="plan marked"))]


def commit_on_main(project: Path, tmp_path: Path) -> None:
    """Someone else's work lands on main while the PR is open: greet.py, differently."""
    other = tmp_path / "other"
    git(project, "worktree", "add", "-q", str(other), "main")
    (other / "greet.py").write_text("def greet(name):\n    return 'Hey ' + name\n")
    git(other, "add", "greet.py")
    git(other, "commit", "-q", "-m", "Someone else's greet")
    git(project, "worktree", "remove", str(other))


async def test_a_merge_conflict_halts_the_job_until_the_person_clears_it(
        project: Path, server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    session, stream, job = start(project, server)
    server.add(*to_plan_updated(job), *STOP)
    await collect(stream)
    assert session.job is not None and session.job.kind == "PLAN_UPDATED"
    commit_on_main(project, tmp_path)

    server.add(reply(call("get_task")))
    events = await collect(session.submit(""))
    halted = [e for e in events if isinstance(e, JobStateChanged) and e.waiting == "halted"]
    message = ("ERROR: the automated merge failed with a conflict. Resolve the conflict in branch 'feat/add-greeting' "
               f"and merge it to main by hand. Then delete the branch and {job}/ACTIVE_PR.json, and clear the halt "
               "(/workflow clear, or `anvil --workflow tdd --clear-halt`) before the job goes on with the next PR.")
    assert [(e.old, e.new, e.detail) for e in halted] == [("MERGING_BRANCH", "HALTED", message)]
    assert events[-1].message.startswith(f"Job {job.rsplit('/', 1)[1]} is HALTED: ERROR: the automated merge")  # type: ignore[attr-defined]
    assert "git merge --abort" in [e.command for e in events if isinstance(e, GitOperation)]
    # main as it was: no merge under way, the PR's branch kept for the person
    assert git(project, "branch", "--show-current") == "main" and git(project, "status", "--porcelain") == ""
    assert "feat/add-greeting" in git(project, "branch", "--format=%(refname:short)").splitlines()

    # nothing runs while HALTED: not even a model call
    asked = len(server.requests)
    events = await collect(session.submit("Go on, please."))
    assert len(server.requests) == asked
    assert [(e.old, e.new, e.waiting) for e in events if isinstance(e, JobStateChanged)] == [
        ("HALTED", "HALTED", "halted")]

    # cleared only once the person did what the message says
    with pytest.raises(JobError, match=r"^Branch 'feat/add-greeting' still exists: merge it into main by hand"):
        session.clear_job_halt()
    merge = subprocess.run(["git", "merge", "--no-ff", "-q", "-m", "Merge by hand", "feat/add-greeting"],
                           cwd=project, capture_output=True, text=True)
    assert merge.returncode == 1 and "CONFLICT" in merge.stdout
    (project / "greet.py").write_text(GREET)  # resolved by hand
    git(project, "add", "greet.py")
    git(project, "commit", "-q", "--no-edit")
    git(project, "branch", "-d", "feat/add-greeting")
    (project / job / "ACTIVE_PR.json").unlink()
    assert session.clear_job_halt().startswith(f"Job {job.rsplit('/', 1)[1]}: the halt is cleared; it goes on in "
                                                "INITIALIZING (PR 2).")

    server.add(reply(call("get_task")), reply(submit(summary="all done", plan_complete=True)))
    events = await collect(session.submit(""))
    await session.close()
    assert [e.status for e in events if isinstance(e, JobFinished)] == ["complete"]
    assert "Read the master plan" in results(events, "get_task")[0].output

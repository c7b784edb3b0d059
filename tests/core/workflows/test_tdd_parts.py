"""The TDD job's parts around its state machine: the git module's limits, the review command's output, the preflight
gate's default, what run_command may run, the one-liners, the trusted settings, and the job's start and resume."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from anvil.core.job_events import GitOperation, JobStateChanged
from anvil.core.tools.base import ToolContext, ToolSettings
from anvil.core.tools.shell.shell_tools import RunCommand
from anvil.core.tools.shell.test_runner import RunTests, runs_test_runner
from anvil.core.workflows.base import JobError
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.tdd.git import Git, GitRefused
from anvil.core.workflows.tdd.machine import Finding, ReviewOutcome, Trigger
from anvil.core.workflows.tdd.observe import Gate, Observer, parse_review
from anvil.core.workflows.tdd.workflow import TddSettings, TddWorkflow
from anvil.frontend.lines import Line, describe
from anvil.trust import describe as describe_risky
from anvil.trust import split_layer
from tests.support.agents import EchoTool
from tests.support.tdd import PLAN_PATH, git, tdd_repo


def test_git_never_pushes_forces_or_touches_another_branch(tmp_path: Path) -> None:
    tdd_repo(tmp_path)
    seen: list[GitOperation] = []
    ops = Git(tmp_path, "job-1", seen.append)
    for args in (("push", "origin", "main"), ("branch", "-D", "x"), ("push", "--force")):
        with pytest.raises(GitRefused):
            ops.run(*args)
    with pytest.raises(GitRefused, match="'other' is neither the main branch nor the PR branch"):
        ops._branch("other")  # what every sequence checks out, creates, merges or deletes goes through this
    outcome = ops.create_pr_branch("main", "feat/x")
    assert outcome.ok and outcome.message == "Created branch feat/x from main." and ops.branches == {"main", "feat/x"}
    assert git(tmp_path, "branch", "--show-current") == "feat/x"
    assert seen and all(event.job_id == "job-1" for event in seen)
    assert "git checkout -b feat/x" in [event.command for event in seen]
    again = Git(tmp_path, "job-1").create_pr_branch("main", "feat/x")
    assert not again.ok and again.problem == "failed" and "a branch named 'feat/x' exists already" in again.message


def test_main_is_pulled_first_when_it_has_an_upstream_and_merged_back(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    tdd_repo(origin)
    git(tmp_path, "clone", "-q", str(origin), "clone")
    clone = tmp_path / "clone"
    for key, value in (("user.email", "dev@example.com"), ("user.name", "Dev")):
        git(clone, "config", key, value)
    (origin / "later.txt").write_text("pushed by someone else\n")
    git(origin, "add", "later.txt")
    git(origin, "commit", "-q", "-m", "Later work")
    seen: list[GitOperation] = []
    ops = Git(clone, "j", seen.append)
    outcome = ops.create_pr_branch("main", "feat/x")
    assert outcome.ok and outcome.message == "Created branch feat/x from main (pulled first)."
    assert "git pull --ff-only" in [event.command for event in seen] and (clone / "later.txt").exists()
    (clone / "x.txt").write_text("x\n")
    git(clone, "add", "x.txt")
    git(clone, "commit", "-q", "-m", "feat: X")
    merged = ops.merge_pr_branch("main", "feat/x", "feat: X")
    assert merged.ok and merged.message.endswith("and deleted the branch.")
    assert git(clone, "log", "-1", "--format=%s") == "Merge feat/x: feat: X"
    assert git(origin, "log", "-1", "--format=%s") == "Later work"  # nothing was pushed


def test_a_dirty_tree_keeps_the_branch_from_being_created(tmp_path: Path) -> None:
    tdd_repo(tmp_path)
    (tmp_path / "new.py").write_text("x = 1\n")
    outcome = Git(tmp_path, "j").create_pr_branch("main", "feat/x")
    assert (outcome.ok, outcome.problem, outcome.message) == (False, "dirty", "?? new.py")
    assert git(tmp_path, "branch", "--show-current") == "main"


def test_the_plan_must_be_marked_with_the_hash_and_only_the_plan_may_change(tmp_path: Path) -> None:
    tdd_repo(tmp_path)
    ops = Git(tmp_path, "j")
    head = ops.head()
    assert "is unchanged" in ops.commit_plan(PLAN_PATH, head, "feat: X").message
    plan = tmp_path / PLAN_PATH
    plan.write_text(plan.read_text().replace("## PR 1", "## [DONE] PR 1"))
    assert "has both [DONE] and the commit hash" in ops.commit_plan(PLAN_PATH, head, "feat: X").message
    (tmp_path / "other.txt").write_text("x")
    assert "these changed too: other.txt" in ops.commit_plan(PLAN_PATH, head, "feat: X").message
    (tmp_path / "other.txt").unlink()
    plan.write_text(plan.read_text().replace("[DONE] PR 1: feat: Add greeting", f"[DONE] PR 1 ({head[:7]})"))
    hook = tmp_path / ".git" / "hooks" / "pre-commit"  # the repository's hooks are not anvil's to run
    hook.write_text("#!/bin/sh\ntouch hook-ran\nexit 1\n")
    hook.chmod(0o755)
    done = ops.commit_plan(PLAN_PATH, head, "feat: X")
    assert not (tmp_path / "hook-ran").exists()
    assert done.ok and git(tmp_path, "log", "-1", "--format=%s") == 'docs: mark "feat: X" done in the plan'


def test_a_review_command_prints_its_findings_as_json() -> None:
    assert parse_review('$ review\n{"findings": []}\n[exit 0]') == ReviewOutcome()
    text = '$ review\nlooking...\n{"findings": [{"title": "T", "detail": "D", "file": "a.py", "line": 3}]}\n[exit 0]'
    assert parse_review(text) == ReviewOutcome((Finding("T", "D", "a.py", 3),))
    assert parse_review('$ r\n[{"title": "Bare list"}]\n[exit 0]').findings == (Finding("Bare list", "Bare list"),)
    assert "no JSON with a findings list" in parse_review("$ r\nall good\n[exit 0]").error
    assert "has no title" in parse_review('$ r\n{"findings": [{"detail": "x"}]}\n[exit 0]').error


async def test_the_review_command_runs_in_the_project_and_says_what_to_review(tmp_path: Path) -> None:
    tdd_repo(tmp_path)
    files = JobFiles(tmp_path, tmp_path / ".anvil" / "jobs" / "j")
    files.write("ACTIVE_PR.json", "{}")
    script = ('printf \'{"findings": [{"title": "%s", "detail": "%s"}]}\' "$ANVIL_PR_BRANCH" '
              '"$(basename "$ANVIL_ACTIVE_PR")"')
    ctx = ToolContext(root=tmp_path, data_dir=tmp_path / "data")
    observer = Observer(files, Git(tmp_path, "j"), Gate(PLAN_PATH, review_command=script), ctx, None, None)
    from anvil.core.workflows.tdd.schema import Orchestration
    from tests.core.workflows.test_tdd_machine import ALL_DONE

    state = Orchestration(main_branch="main", current_pr_branch="feat/x")
    outcome = await observer.review(state, ALL_DONE)
    assert outcome == ReviewOutcome((Finding("feat/x", "ACTIVE_PR.json"),))
    failing = Observer(files, Git(tmp_path, "j"), Gate(PLAN_PATH, review_command="exit 4"), ctx, None, None)
    assert (await failing.review(state, ALL_DONE)).error.startswith("review_command failed:")
    await ctx.close()


def workflow(tmp_path: Path, **settings: object) -> TddWorkflow:
    tdd_repo(tmp_path)
    job = TddWorkflow.start(tmp_path, tmp_path / ".anvil" / "jobs" / "job-1", "", TddSettings(**settings))  # type: ignore[arg-type]
    job.attach(ToolContext(root=tmp_path, data_dir=tmp_path / "data", settings=ToolSettings(test_command="make t")),
               "session-1")
    return job


def test_run_command_refuses_what_runs_tests_and_run_tests_is_not_offered(tmp_path: Path) -> None:
    job = workflow(tmp_path)
    offered = [tool.name for tool in job.offered_tools([RunCommand(), RunTests(), EchoTool()])]
    assert offered == ["run_command", "get_task", "submit_work", "request_scope_reduction",
                       "escalate_for_external_help"]  # echo is of kind "other": not offered
    for command in ("pytest -q", "cd sub && python3 -m pytest", "npm test", "go test ./...", "make check",
                    "make t", "bash -c 'make t -k x'"):
        refusal = job.check_call("run_command", {"command": command})
        assert refusal is not None and refusal.startswith(f"Not run: `{command}` runs tests"), command
        assert "submit_work" in refusal
    for command in ("git status", "ls", "python3 script.py", "make build"):
        assert job.check_call("run_command", {"command": command}) is None, command
    assert job.check_call("run_tests", {}).startswith("run_tests is not offered in a TDD job")  # type: ignore[union-attr]
    assert job.check_call("echo", {"text": "x"}).startswith("echo is not offered in a TDD job")  # type: ignore[union-attr]
    assert job.check_call("run_command", {"nonsense": 1}) is None  # the registry reports bad arguments


def test_the_test_runner_detection_is_the_one_run_tests_and_stage_words_use() -> None:
    assert runs_test_runner("uv run pytest tests/") and runs_test_runner("yarn test")
    assert runs_test_runner("./scripts/check.sh --all", "./scripts/check.sh")
    assert runs_test_runner("npx jest --watch") and runs_test_runner("./node_modules/.bin/vitest")
    assert not runs_test_runner("cat pytest.ini") and not runs_test_runner("cp tox.ini tox.bak")  # files, not runs
    assert not runs_test_runner("echo done", "make t")


def test_the_preflight_gate_defaults_to_verify_then_the_test_command(tmp_path: Path) -> None:
    job = workflow(tmp_path)
    assert job._gate().preflight == ("make t",)
    job.settings = TddSettings(verify=("ruff check .", "mypy ."))
    assert job._gate().preflight == ("ruff check .", "mypy .")
    job.settings = TddSettings(preflight=("make lint",), verify=("ruff check .",))
    assert job._gate().preflight == ("make lint",)
    job.settings = TddSettings(preflight=())
    assert job._gate().preflight == ()


def test_a_job_resumes_from_its_files_and_a_bad_state_file_is_one_line(tmp_path: Path) -> None:
    job = workflow(tmp_path, main_branch="main")
    state = json.loads((job.job_dir / "ORCHESTRATION_STATE.json").read_text())
    assert (state["status"], state["main_branch"], state["session_id"]) == ("INITIALIZING", "main", "session-1")
    assert (job.job_dir / ".gitignore").read_text().endswith("*\n")
    assert git(tmp_path, "status", "--porcelain") == ""
    again = TddWorkflow.open(tmp_path, job.job_dir, TddSettings())
    assert again.status().kind == "INITIALIZING" and again.status().phase == 1
    (job.job_dir / "ORCHESTRATION_STATE.json").write_text(json.dumps({**state, "debug_attempt_counter": "two"}))
    with pytest.raises(JobError, match=r"ORCHESTRATION_STATE.json does not match its schema: debug_attempt_counter: "
                                       r"input should be a valid integer"):
        TddWorkflow.open(tmp_path, job.job_dir, TddSettings())
    with pytest.raises(JobError, match=r"The main branch trunk does not exist: set \[workflows.tdd\] main_branch"):
        TddWorkflow.start(tmp_path, tmp_path / ".anvil" / "jobs" / "job-2", "", TddSettings(main_branch="trunk"))
    with pytest.raises(JobError, match=r"is not halted \(it is in INITIALIZING\); there is nothing to clear"):
        again.clear_halt()


def test_the_lines_every_front_end_shows() -> None:
    assert describe(JobStateChanged("tdd", "J", "EXECUTING_TDD", "DEBUGGING")) == Line(
        "phase", "EXECUTING_TDD → DEBUGGING")
    assert describe(JobStateChanged("tdd", "J", "MERGING_BRANCH", "HALTED", "ERROR: the automated merge failed",
                                    "halted")) == Line("error", "ERROR: the automated merge failed")
    escalated = describe(JobStateChanged("tdd", "J", "DEBUGGING", "DEBUGGING", "# Stuck", "escalated"))
    assert escalated is not None and escalated.kind == "notice" and "Its report:\n\n# Stuck\n\n" in escalated.text
    assert describe(GitOperation("J", "git checkout -b feat/x", True, "Switched")) == Line(
        "notice", "$ git checkout -b feat/x")
    assert describe(GitOperation("J", "git status --porcelain", True, "")) is None
    assert describe(GitOperation("J", "git pull --ff-only", False, "fatal: Not possible to fast-forward\nmore")) == \
        Line("error", "$ git pull --ff-only failed: fatal: Not possible to fast-forward")


def test_the_tdd_commands_a_project_sets_need_trust() -> None:
    harmless, risky = split_layer({"workflows": {"jobs_dir": "jobs", "tdd": {
        "plan_path": "PLAN.md", "preflight": ["make lint"], "review_command": "./review.sh"}}})
    assert harmless == {"workflows": {"jobs_dir": "jobs", "tdd": {"plan_path": "PLAN.md"}}}
    assert [str(item) for item in describe_risky(risky)] == [
        "workflows: the TDD workflow's preflight runs `make lint`",
        "workflows: the TDD workflow's review runs `./review.sh`"]
    assert split_layer({"workflows": {"tdd": {"plan_path": "P.md"}}})[1] == {}


async def test_an_interrupt_lets_a_git_sequence_finish_and_its_state_be_saved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    job = workflow(tmp_path)
    git(tmp_path, "checkout", "-q", "-b", "feat/x")
    (tmp_path / "x.txt").write_text("x\n")
    git(tmp_path, "add", "x.txt")
    git(tmp_path, "commit", "-q", "-m", "feat: X")
    state = json.loads((job.job_dir / "ORCHESTRATION_STATE.json").read_text())
    state.update(status="MERGING_BRANCH", current_pr_branch="feat/x")
    (job.job_dir / "ORCHESTRATION_STATE.json").write_text(json.dumps(state))
    started = threading.Event()
    merge = Git.merge_pr_branch

    def slow_merge(self: Git, main: str, branch: str, title: str) -> Any:
        started.set()
        time.sleep(0.5)
        return merge(self, main, branch, title)

    monkeypatch.setattr(Git, "merge_pr_branch", slow_merge)
    assert job._ctx is not None
    call = asyncio.ensure_future(job.handle(Trigger("get_task"), job._ctx))
    await asyncio.to_thread(started.wait, 5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    saved = json.loads((job.job_dir / "ORCHESTRATION_STATE.json").read_text())
    assert (saved["status"], saved["merged"]) == ("INITIALIZING", ["feat/x"])  # the merge happened: the state says so
    assert git(tmp_path, "branch", "--format=%(refname:short)") == "main"

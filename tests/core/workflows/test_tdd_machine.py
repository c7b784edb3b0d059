"""The TDD job's state machine as pure code: every row of its transition table taken by a case, the design's table
row by row, what a decision asks to observe (and what it never does), the debugging guidance for every range of the
counter and every lock threshold, branch names, and the state files' schema errors."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from anvil.core.workflows.tdd import texts
from anvil.core.workflows.tdd.acts import replan_problems
from anvil.core.workflows.tdd.machine import (
    KEEP,
    Finding,
    GitOutcome,
    Head,
    Limits,
    Need,
    Probe,
    ReviewOutcome,
    RunOutcome,
    Setup,
    Step,
    Submission,
    Trigger,
    branch_name,
    decide,
)
from anvil.core.workflows.tdd.rows import TABLE
from anvil.core.workflows.tdd.schema import (
    ActivePr,
    BreakdownHistory,
    Halt,
    Invalid,
    Orchestration,
    PrTask,
    ReplanContext,
    TddStep,
    parse_active_pr,
    parse_orchestration,
)

SETUP = Setup("docs/Plan_Doc/Active_Plan.md", ".anvil/jobs/j1", Limits(6, 10), test_command="pytest -q")
PASS = RunOutcome("pytest -q tests/test_greet.py", True, "1 passed")
FAIL = RunOutcome("pytest -q tests/test_greet.py", False, "E   AssertionError: 'Hi' != 'Hello'")
GATE_FAIL = RunOutcome("ruff check .", False, "greet.py:1:1: F401 unused import")
CLEAN = Head("c0ffee" * 6 + "abcd", True, 1)


def steps(*spec: str) -> tuple[TddStep, ...]:
    """``"RED"`` is a TODO step, ``"RED+"`` a DONE one."""
    return tuple(TddStep(type=s.rstrip("+"), description=f"{s.rstrip('+').lower()} it",  # type: ignore[arg-type]
                         status="DONE" if s.endswith("+") else "TODO") for s in spec)


def task(name: str, *spec: str, **extra: Any) -> PrTask:
    done = all(s.endswith("+") for s in spec)
    return PrTask(taskName=name, status="DONE" if done else "TODO", tdd_steps=steps(*spec), **extra)


def plan(*tasks: PrTask) -> ActivePr:
    return ActivePr(masterPlanPath="docs/Plan_Doc/Active_Plan.md", prTitle="feat: Add greeting", summary="s",
                    verificationPlan="v", tasks=tasks)


def state(status: str = "INITIALIZING", **changes: Any) -> Orchestration:
    return Orchestration(main_branch="main").model_copy(update={"status": status, **changes})


RED_NEXT = plan(task("greet", "RED", "GREEN"))
GREEN_NEXT = plan(task("greet", "RED+", "GREEN"))
REFACTOR_NEXT = plan(task("greet", "RED+", "GREEN+", "REFACTOR"))
NEXT_TASK = plan(task("greet", "RED+", "GREEN+"), task("farewell", "RED", "GREEN"))
ALL_DONE = plan(task("greet", "RED+", "GREEN+"))
REPLAN = ReplanContext(original_task="greet", goal="   - RED: red it", error="boom", done_tasks=("setup",),
                       task_names=("setup", "greet"))


def replanned(history: bool = True, verification: str = "greet 1b (Verification): the original goal") -> ActivePr:
    first = task("greet 1a: the interface", "RED", "GREEN",
                 breakdownHistory=BreakdownHistory(originalTaskName="greet", justification="smaller")
                 if history else None)
    return plan(task("setup", "RED+", "GREEN+"), first, task(verification, "RED", "GREEN"))


def sub(**fields: Any) -> Trigger:
    return Trigger("submit_work", Submission(**fields))


GET = Trigger("get_task")
SCOPE = Trigger("request_scope_reduction")
ESCALATE = Trigger("escalate_for_external_help", report="# Stuck\nThe greeting never passes.")
HALT = Halt(kind="merge_conflict", message="ERROR: the automated merge failed", branch="feat/add-greeting")


@dataclass
class Case:
    row: str
    state: Orchestration
    trigger: Trigger
    facts: dict[Probe, Any]
    status: str  # the state after
    reply: str = "SUCCESS"
    then: str = "answer"
    check: Any = None  # a predicate on the step
    setup: Setup = field(default_factory=lambda: SETUP)


def debugging(**changes: Any) -> Orchestration:
    return state("DEBUGGING", **{"debug_attempt_counter": 1, "last_error": "boom", **changes})


CASES = [
    # HALTED: nothing runs, whatever is called
    Case("halted", state("HALTED", halt=HALT), GET, {}, "HALTED", "FAILURE", "pause",
         lambda s: "merge failed" in s.reply.output),
    Case("halted-submit", state("HALTED", halt=HALT), sub(summary="x"), {}, "HALTED", "FAILURE", "pause"),
    Case("halted-scope", state("HALTED", halt=HALT), SCOPE, {}, "HALTED", "FAILURE", "pause"),
    Case("halted-escalate", state("HALTED", halt=HALT), ESCALATE, {}, "HALTED", "FAILURE", "pause"),
    # INITIALIZING
    Case("init", state(), GET, {"pr": None}, "INITIALIZING", check=lambda s: '"tdd_steps"' in s.reply.output
         and "docs/Plan_Doc/Active_Plan.md" in s.reply.output and ".anvil/jobs/j1/ACTIVE_PR.json" in s.reply.output),
    Case("init-stale", state(), GET, {"pr": ALL_DONE}, "INITIALIZING",
         check=lambda s: s.pr is None and s.reply.output.startswith("The old ACTIVE_PR.json had every task DONE")),
    Case("init-resume", state(), GET, {"pr": GREEN_NEXT}, "CREATING_BRANCH", then="get_task"),
    Case("init-resume", state(current_pr_branch="feat/add-greeting"), GET, {"pr": GREEN_NEXT}, "EXECUTING_TDD",
         then="get_task"),
    Case("init-invalid", state(), GET, {"pr": Invalid(message="ACTIVE_PR.json is not valid JSON: x.")},
         "INITIALIZING", "FAILURE", check=lambda s: "not valid JSON" in s.reply.output),
    Case("plan-complete", state(merged=("feat: one",)), sub(summary="done", plan_complete=True), {"pr": None},
         "INITIALIZING", then="finish", check=lambda s: s.state.job_status == "complete"
         and "This job merged: feat: one" in s.reply.output),
    Case("init-submit", state(), sub(summary="planned"), {"pr": RED_NEXT}, "CREATING_BRANCH",
         check=lambda s: '"feat: Add greeting", 1 tasks, 2 steps' in s.reply.output),
    Case("init-stale-submit", state(), sub(summary="planned"), {"pr": ALL_DONE}, "INITIALIZING", "FAILURE"),
    Case("init-invalid-submit", state(), sub(summary="planned"), {"pr": None}, "INITIALIZING", "FAILURE",
         check=lambda s: "ACTIVE_PR.json does not exist" in s.reply.output),
    # CREATING_BRANCH
    Case("branch-no-pr", state("CREATING_BRANCH"), GET, {"pr": None}, "CREATING_BRANCH", "FAILURE"),
    Case("branch", state("CREATING_BRANCH"), GET,
         {"pr": RED_NEXT, "branch": GitOutcome(True, message="Created branch.", commit="abc")}, "EXECUTING_TDD",
         then="get_task", check=lambda s: (s.state.current_pr_branch, s.state.last_commit_hash) == (
             "feat/add-greeting", "abc")),
    Case("branch-dirty", state("CREATING_BRANCH"), GET, {"pr": RED_NEXT, "branch": GitOutcome(False, "dirty",
                                                                                               " M app.py")},
         "CREATING_BRANCH", "FAILURE", check=lambda s: " M app.py" in s.reply.output),
    Case("branch-failed", state("CREATING_BRANCH"), GET,
         {"pr": RED_NEXT, "branch": GitOutcome(False, "failed", "`git pull --ff-only` failed: diverged")}, "HALTED",
         "FAILURE", "pause", lambda s: s.state.halt is not None and (s.state.halt.kind, s.state.halt.resume_at) == (
             "git", "CREATING_BRANCH")),
    # EXECUTING_TDD, get_task
    Case("step-no-pr", state("EXECUTING_TDD"), GET, {"pr": Invalid(message="bad")}, "EXECUTING_TDD", "FAILURE"),
    Case("checkpoint-task", state("EXECUTING_TDD", checkpoint_due=True), GET, {"pr": REFACTOR_NEXT},
         "EXECUTING_TDD", check=lambda s: "git commit" in s.reply.output),
    Case("step", state("EXECUTING_TDD"), GET, {"pr": GREEN_NEXT}, "EXECUTING_TDD",
         check=lambda s: "Step 2 (GREEN): green it" in s.reply.output and s.pr.tasks[0].status == "IN_PROGRESS"),
    Case("all-done", state("EXECUTING_TDD"), GET, {"pr": ALL_DONE}, "CODE_REVIEW", then="get_task"),
    # EXECUTING_TDD, submit_work
    Case("checkpoint", state("EXECUTING_TDD", checkpoint_due=True), sub(summary="c"), {"pr": REFACTOR_NEXT,
                                                                                        "head": CLEAN},
         "EXECUTING_TDD", check=lambda s: not s.state.checkpoint_due and s.state.last_commit_hash == CLEAN.commit
         and s.then == "answer"),
    Case("checkpoint", state("EXECUTING_TDD", checkpoint_due=True), sub(summary="c"), {"pr": NEXT_TASK,
                                                                                        "head": CLEAN},
         "EXECUTING_TDD", then="reset", check=lambda s: 'Task "greet" is done and committed' in s.reply.output),
    Case("checkpoint-missing", state("EXECUTING_TDD", checkpoint_due=True), sub(summary="c"),
         {"pr": REFACTOR_NEXT, "head": Head("x", False, 1, " M greet.py")}, "EXECUTING_TDD", "FAILURE"),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x"), {"pr": RED_NEXT}, "EXECUTING_TDD", "FAILURE",
         check=lambda s: "expectation PASS or FAIL" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"), {"pr": RED_NEXT},
         "EXECUTING_TDD", "FAILURE", check=lambda s: "this is a RED step" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x", expectation="FAIL"), {"pr": GREEN_NEXT},
         "EXECUTING_TDD", "FAILURE", check=lambda s: "expected to PASS" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x", analysis_decision="SUCCESS"), {"pr": RED_NEXT},
         "EXECUTING_TDD", "FAILURE", check=lambda s: "no NEEDS_ANALYSIS result" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD", analysis_output="o"), sub(
        summary="x", analysis_decision="SUCCESS", expectation="FAIL"), {"pr": RED_NEXT}, "EXECUTING_TDD", "FAILURE",
        check=lambda s: "not both" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x", expectation="FAIL"), {"pr": RED_NEXT},
         "EXECUTING_TDD", "FAILURE", setup=Setup(test_command=None),
         check=lambda s: "no test command" in s.reply.output),
    Case("submit-usage", state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"), {"pr": ALL_DONE},
         "EXECUTING_TDD", "FAILURE", check=lambda s: "call get_task" in s.reply.output),
    Case("red", state("EXECUTING_TDD"), sub(summary="x", expectation="FAIL"), {"pr": RED_NEXT, "test": FAIL},
         "EXECUTING_TDD", "NEEDS_ANALYSIS", check=lambda s: s.state.analysis_output == FAIL.output
         and FAIL.output in s.reply.output),
    Case("red", state("EXECUTING_TDD"), sub(summary="x", expectation="FAIL"), {"pr": RED_NEXT, "test": PASS},
         "EXECUTING_TDD", "NEEDS_ANALYSIS", check=lambda s: "passed. Analyse" in s.reply.output),
    Case("analysis-success", state("EXECUTING_TDD", analysis_output="o"), sub(summary="x", analysis_decision="SUCCESS"),
         {"pr": RED_NEXT}, "EXECUTING_TDD", check=lambda s: s.pr.tasks[0].tdd_steps[0].status == "DONE"
         and not s.state.checkpoint_due and s.state.analysis_output is None),
    Case("analysis-failure", state("EXECUTING_TDD", analysis_output="ImportError"), sub(
        summary="x", analysis_decision="FAILURE"), {"pr": RED_NEXT}, "DEBUGGING", "FAILURE",
        check=lambda s: (s.state.debug_attempt_counter, s.state.last_error) == (1, "ImportError")),
    Case("test-failed", state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"), {"pr": GREEN_NEXT, "test": FAIL},
         "DEBUGGING", "FAILURE",
         check=lambda s: (s.state.debug_attempt_counter, s.state.last_error) == (1, FAIL.output)),
    Case("preflight-failed", state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"),
         {"pr": GREEN_NEXT, "test": PASS, "preflight": GATE_FAIL}, "DEBUGGING", "FAILURE",
         check=lambda s: s.state.last_error == GATE_FAIL.output and "The preflight gate failed" in s.reply.output),
    Case("passed", state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"),
         {"pr": GREEN_NEXT, "test": PASS, "preflight": PASS}, "EXECUTING_TDD",
         check=lambda s: s.state.checkpoint_due and s.pr.tasks[0].status == "DONE"),
    # DEBUGGING
    Case("debug", debugging(), GET, {"pr": GREEN_NEXT}, "DEBUGGING",
         check=lambda s: "fix the bug" in s.reply.output and s.reply.output.rstrip().endswith("boom")),
    Case("debug-submit-usage", debugging(), sub(summary="x"), {"pr": GREEN_NEXT}, "DEBUGGING", "FAILURE"),
    Case("debug-red", debugging(), sub(summary="x", expectation="FAIL"), {"pr": RED_NEXT, "test": FAIL},
         "DEBUGGING", "NEEDS_ANALYSIS"),
    Case("debug-analysis-success", debugging(analysis_output="o"), sub(summary="x", analysis_decision="SUCCESS"),
         {"pr": RED_NEXT}, "EXECUTING_TDD", check=lambda s: (s.state.debug_attempt_counter, s.state.last_error) == (
             0, None)),
    Case("debug-analysis-failure", debugging(analysis_output="o"), sub(summary="x", analysis_decision="FAILURE"),
         {"pr": RED_NEXT}, "DEBUGGING", "FAILURE", check=lambda s: s.state.debug_attempt_counter == 2),
    Case("debug-test-failed", debugging(), sub(summary="x", expectation="PASS"), {"pr": GREEN_NEXT, "test": FAIL},
         "DEBUGGING", "FAILURE", check=lambda s: s.state.debug_attempt_counter == 2),
    Case("debug-preflight-failed", debugging(), sub(summary="x", expectation="PASS"),
         {"pr": GREEN_NEXT, "test": PASS, "preflight": GATE_FAIL}, "DEBUGGING", "FAILURE"),
    Case("debug-passed", debugging(guidance="use f-strings"), sub(summary="x", expectation="PASS"),
         {"pr": GREEN_NEXT, "test": PASS, "preflight": PASS}, "EXECUTING_TDD",
         check=lambda s: (s.state.debug_attempt_counter, s.state.last_error, s.state.guidance) == (0, None, None)
         and s.state.checkpoint_due),
    # escape hatches
    Case("scope-replanned", debugging(debug_attempt_counter=6, replanned_tasks=("greet",)), SCOPE,
         {"pr": GREEN_NEXT}, "DEBUGGING", "FAILURE", check=lambda s: "already comes from a re-plan" in s.reply.output),
    Case("scope-reduction", debugging(debug_attempt_counter=6), SCOPE, {"pr": GREEN_NEXT}, "REPLANNING",
         then="reset", check=lambda s: s.effects == ("reset_hard",) and s.state.replan is not None
         and s.state.replan.original_task == "greet" and s.state.replan.error == "boom"
         and s.pr.tasks[0].status == "ERROR" and "Verification" in s.reply.output),
    Case("scope-locked", debugging(debug_attempt_counter=5), SCOPE, {"pr": GREEN_NEXT}, "DEBUGGING", "FAILURE",
         check=lambda s: "there have been 5; 1 more to go" in s.reply.output),
    Case("scope-locked", state("EXECUTING_TDD"), SCOPE, {"pr": GREEN_NEXT}, "EXECUTING_TDD", "FAILURE",
         check=lambda s: "there have been 0; 6 more to go" in s.reply.output),
    Case("escalate", debugging(debug_attempt_counter=10), ESCALATE, {"pr": GREEN_NEXT}, "DEBUGGING", then="pause",
         check=lambda s: s.state.escalation == "# Stuck\nThe greeting never passes."),
    Case("escalate", debugging(debug_attempt_counter=6, replanned_tasks=("greet",)), ESCALATE, {"pr": GREEN_NEXT},
         "DEBUGGING", then="pause"),
    Case("escalate-locked", debugging(debug_attempt_counter=9), ESCALATE, {"pr": GREEN_NEXT}, "DEBUGGING", "FAILURE",
         check=lambda s: "unlocks after 10 failed attempts" in s.reply.output and "1 more to go" in s.reply.output),
    Case("escalate-locked", state("EXECUTING_TDD"), ESCALATE, {"pr": GREEN_NEXT}, "EXECUTING_TDD", "FAILURE"),
    # REPLANNING
    Case("replan", state("REPLANNING", replan=REPLAN, last_error="boom"), GET, {}, "REPLANNING",
         check=lambda s: 'task "greet"' in s.reply.output and "boom" in s.reply.output),
    Case("replan-invalid", state("REPLANNING", replan=REPLAN), sub(summary="x"), {"pr": None}, "REPLANNING",
         "FAILURE"),
    Case("replan-submit", state("REPLANNING", replan=REPLAN, debug_attempt_counter=6, last_error="boom"),
         sub(summary="x"), {"pr": replanned()}, "EXECUTING_TDD",
         check=lambda s: s.state.replanned_tasks == ("greet 1a: the interface",
                                                     "greet 1b (Verification): the original goal")
         and (s.state.debug_attempt_counter, s.state.last_error, s.state.replan) == (0, None, None)),
    Case("replan-rejected", state("REPLANNING", replan=REPLAN), sub(summary="x"), {"pr": replanned(history=False)},
         "REPLANNING", "FAILURE", check=lambda s: "needs breakdownHistory" in s.reply.output),
    # CODE_REVIEW
    Case("review-no-pr", state("CODE_REVIEW"), GET, {"pr": None}, "CODE_REVIEW", "FAILURE"),
    Case("review-failed", state("CODE_REVIEW"), GET, {"pr": ALL_DONE, "review": ReviewOutcome(error="no JSON")},
         "CODE_REVIEW", "FAILURE", "pause"),
    Case("review-approved", state("CODE_REVIEW"), GET, {"pr": ALL_DONE, "review": ReviewOutcome()},
         "AWAITING_FINALIZATION", then="get_task", check=lambda s: s.state.review_rounds == 1),
    Case("review-findings", state("CODE_REVIEW", review_rounds=1), GET,
         {"pr": ALL_DONE, "review": ReviewOutcome((Finding("No docstring", "Add one.", "greet.py", 1),))},
         "EXECUTING_TDD", then="get_task",
         check=lambda s: s.pr.tasks[-1].taskName == "Review 2.1: No docstring" and s.pr.tasks[-1].tdd_steps[0].type
         == "GREEN" and "(greet.py:1)" in s.pr.tasks[-1].tdd_steps[0].description),
    # AWAITING_FINALIZATION .. MERGING_BRANCH
    Case("squash", state("AWAITING_FINALIZATION"), GET, {"pr": ALL_DONE}, "AWAITING_FINALIZATION",
         check=lambda s: 'git reset --soft main && git commit -m "feat: Add greeting"' in s.reply.output),
    Case("finalize", state("AWAITING_FINALIZATION"), sub(summary="squashed"), {"head": CLEAN}, "FINALIZE_COMPLETE",
         check=lambda s: s.state.last_commit_hash == CLEAN.commit),
    Case("finalize-wrong", state("AWAITING_FINALIZATION"), sub(summary="squashed"), {"head": Head("x", True, 3)},
         "AWAITING_FINALIZATION", "FAILURE", check=lambda s: "has 3 commits over main" in s.reply.output),
    Case("plan-task", state("FINALIZE_COMPLETE", last_commit_hash="abcdef1234567890"), GET, {"pr": ALL_DONE},
         "FINALIZE_COMPLETE", check=lambda s: "[DONE]" in s.reply.output and "abcdef123456" in s.reply.output),
    Case("plan-updated", state("FINALIZE_COMPLETE"), sub(summary="marked"), {"plan": GitOutcome(True, message="ok")},
         "PLAN_UPDATED"),
    Case("plan-not-updated", state("FINALIZE_COMPLETE"), sub(summary="marked"),
         {"plan": GitOutcome(False, "failed", "The master plan is unchanged")}, "FINALIZE_COMPLETE", "FAILURE"),
    Case("to-merge", state("PLAN_UPDATED"), GET, {}, "MERGING_BRANCH", then="get_task"),
    Case("merge", state("MERGING_BRANCH", current_pr_branch="feat/add-greeting", review_rounds=2), GET,
         {"merge": GitOutcome(True, message="Merged.", commit="m1"), "pr": ALL_DONE}, "INITIALIZING", then="reset",
         check=lambda s: s.pr is None and (s.state.pr_number, s.state.merged, s.state.current_pr_branch,
                                           s.state.review_rounds) == (2, ("feat: Add greeting",), None, 0)),
    Case("merge-conflict", state("MERGING_BRANCH", current_pr_branch="feat/add-greeting"), GET,
         {"merge": GitOutcome(False, "conflict", "CONFLICT (content)")}, "HALTED", "FAILURE", "pause",
         check=lambda s: s.state.halt is not None and s.state.halt.kind == "merge_conflict"
         and "Resolve the conflict in branch 'feat/add-greeting'" in s.reply.output),
    Case("nothing-to-submit", state("CREATING_BRANCH"), sub(summary="x"), {}, "CREATING_BRANCH", "FAILURE"),
    Case("nothing-to-submit", state("CODE_REVIEW"), sub(summary="x"), {}, "CODE_REVIEW", "FAILURE"),
]


def take(case_state: Orchestration, trigger: Trigger, facts: dict[Probe, Any], setup: Setup = SETUP) -> Step:
    step = decide(TABLE, case_state, trigger, facts, setup)
    assert not isinstance(step, Need), f"the decision still needs {step.probe}"
    return step


@pytest.mark.parametrize("case", CASES, ids=[f"{c.row}-{n}" for n, c in enumerate(CASES)])
def test_each_row_decides_its_next_state_answer_and_what_follows(case: Case) -> None:
    step = take(case.state, case.trigger, case.facts, case.setup)
    assert step.row == case.row
    assert (step.state.status, step.reply.status, step.then) == (case.status, case.reply, case.then)
    if case.check is not None:
        assert case.check(step), step


def test_every_row_of_the_table_is_taken_by_some_case_and_ids_are_unique() -> None:
    ids = [row.id for row in TABLE]
    assert len(ids) == len(set(ids))
    assert set(ids) == {case.row for case in CASES}


#: the design's transition table, row by row: (state, trigger, next state) and the row that implements it
DESIGN = [
    ("INITIALIZING", "get_task", "INITIALIZING", "init"),
    ("INITIALIZING", "submit_work", "CREATING_BRANCH", "init-submit"),
    ("CREATING_BRANCH", "get_task", "EXECUTING_TDD", "branch"),
    ("EXECUTING_TDD", "get_task", "EXECUTING_TDD", "step"),
    ("EXECUTING_TDD", "get_task", "CODE_REVIEW", "all-done"),
    ("EXECUTING_TDD", "submit_work", "EXECUTING_TDD", "passed"),
    ("EXECUTING_TDD", "submit_work", "DEBUGGING", "test-failed"),
    ("EXECUTING_TDD", "submit_work", "DEBUGGING", "preflight-failed"),
    ("DEBUGGING", "get_task", "DEBUGGING", "debug"),
    ("DEBUGGING", "submit_work", "EXECUTING_TDD", "debug-passed"),
    ("DEBUGGING", "request_scope_reduction", "REPLANNING", "scope-reduction"),
    ("REPLANNING", "get_task", "REPLANNING", "replan"),
    ("REPLANNING", "submit_work", "EXECUTING_TDD", "replan-submit"),
    ("CODE_REVIEW", "get_task", "AWAITING_FINALIZATION", "review-approved"),
    ("CODE_REVIEW", "get_task", "EXECUTING_TDD", "review-findings"),
    ("AWAITING_FINALIZATION", "get_task", "AWAITING_FINALIZATION", "squash"),
    ("AWAITING_FINALIZATION", "submit_work", "FINALIZE_COMPLETE", "finalize"),
    ("FINALIZE_COMPLETE", "get_task", "FINALIZE_COMPLETE", "plan-task"),
    ("FINALIZE_COMPLETE", "submit_work", "PLAN_UPDATED", "plan-updated"),
    ("PLAN_UPDATED", "get_task", "MERGING_BRANCH", "to-merge"),
    ("MERGING_BRANCH", "get_task", "INITIALIZING", "merge"),
    ("MERGING_BRANCH", "get_task", "HALTED", "merge-conflict"),
    ("HALTED", "get_task", "HALTED", "halted"),
]


@pytest.mark.parametrize("design", DESIGN, ids=[f"{d[0]}-{d[1]}-{d[2]}" for d in DESIGN])
def test_every_row_of_the_designs_table_is_a_row_of_ours_and_goes_where_it_says(design: tuple[str, ...]) -> None:
    current, trigger, following, row_id = design
    row = next(row for row in TABLE if row.id == row_id)
    assert (row.state, row.trigger, row.goes_to) == (current, trigger, following)
    taken = [case for case in CASES if case.row == row_id]
    assert taken and all(case.status == following for case in taken[:1])


def probes(case_state: Orchestration, trigger: Trigger, world: dict[Probe, Any]) -> tuple[list[Probe], Step]:
    """The facts a decision asks for, in order, observed from ``world``."""
    asked: list[Probe] = []
    facts: dict[Probe, Any] = {}
    while isinstance(step := decide(TABLE, case_state, trigger, facts, SETUP), Need):
        asked.append(step.probe)
        facts[step.probe] = world[step.probe]
    return asked, step


def test_a_decision_observes_only_what_its_row_needs() -> None:
    world: dict[Probe, Any] = {"pr": GREEN_NEXT, "test": FAIL, "preflight": PASS, "head": CLEAN}
    assert probes(state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"), world)[0] == ["pr", "test"]
    world["test"] = PASS  # the gate runs only after the test passed
    assert probes(state("EXECUTING_TDD"), sub(summary="x", expectation="PASS"), world)[0] == ["pr", "test", "preflight"]
    assert probes(state("EXECUTING_TDD"), sub(summary="x"), world)[0] == ["pr"]  # a bad submission runs nothing
    world.update(pr=RED_NEXT, test=FAIL)
    assert probes(state("EXECUTING_TDD"), sub(summary="x", expectation="FAIL"), world)[0] == ["pr", "test"]
    # the orchestrator's own actions run only in their state: the merge, the branch, the review
    merge = {"merge": GitOutcome(True, commit="m"), "pr": ALL_DONE}
    assert probes(state("MERGING_BRANCH", current_pr_branch="b"), GET, merge)[0] == ["merge", "pr"]
    assert probes(state("CREATING_BRANCH"), GET, {"pr": None})[0] == ["pr"]  # no plan: no branch
    assert probes(state("HALTED", halt=HALT), GET, {})[0] == []
    # a locked escape hatch reverts nothing
    assert probes(debugging(debug_attempt_counter=5), SCOPE, {"pr": GREEN_NEXT})[1].effects == ()


@pytest.mark.parametrize(("counter", "expected"), [
    (1, "Form one hypothesis"), (2, "Form one hypothesis"),
    (3, "Instrument the code"), (4, "Instrument the code"), (5, "Instrument the code"),
    (6, "request_scope_reduction is unlocked"), (7, "request_scope_reduction is unlocked"),
    (9, "request_scope_reduction is unlocked"),
    (10, "escalate_for_external_help is unlocked"), (15, "escalate_for_external_help is unlocked"),
])
def test_the_debugging_guidance_follows_the_counter(counter: int, expected: str) -> None:
    briefing = take(debugging(debug_attempt_counter=counter), GET, {"pr": GREEN_NEXT}).reply.output
    assert expected in briefing and f"failed attempts: {counter}" in briefing


def test_the_guidance_ranges_move_with_the_thresholds_and_a_replanned_task() -> None:
    assert "Instrument" in texts.debug_guidance(3, Limits(4, 8), replanned=False)
    assert "request_scope_reduction" in texts.debug_guidance(4, Limits(4, 8), replanned=False)
    assert "escalate" in texts.debug_guidance(8, Limits(4, 8), replanned=False)
    assert "request_scope_reduction" in texts.debug_guidance(2, Limits(2, 3), replanned=False)  # no room to instrument
    assert "even the smaller re-planned task" in texts.debug_guidance(6, Limits(6, 10), replanned=True)
    assert "Instrument" in texts.debug_guidance(5, Limits(6, 10), replanned=True)


@pytest.mark.parametrize(("counter", "scope", "escalate"), [
    (0, "locked", "locked"), (5, "locked", "locked"), (6, "open", "locked"), (9, "open", "locked"),
    (10, "open", "open"),
])
def test_the_locks_open_at_their_thresholds(counter: int, scope: str, escalate: str) -> None:
    current = debugging(debug_attempt_counter=counter)
    reduced = take(current, SCOPE, {"pr": GREEN_NEXT})
    escalated = take(current, ESCALATE, {"pr": GREEN_NEXT})
    assert reduced.row == ("scope-reduction" if scope == "open" else "scope-locked")
    assert escalated.row == ("escalate" if escalate == "open" else "escalate-locked")
    if scope == "locked":
        assert f"{6 - counter} more to go" in reduced.reply.output
    if escalate == "locked":
        assert f"{10 - counter} more to go" in escalated.reply.output


def test_a_replanned_task_escalates_at_the_scope_threshold_and_is_not_broken_down_again() -> None:
    current = debugging(debug_attempt_counter=5, replanned_tasks=("greet",))
    assert "1 more to go" in take(current, ESCALATE, {"pr": GREEN_NEXT}).reply.output
    current = debugging(debug_attempt_counter=6, replanned_tasks=("greet",))
    assert take(current, ESCALATE, {"pr": GREEN_NEXT}).row == "escalate"
    assert take(current, SCOPE, {"pr": GREEN_NEXT}).row == "scope-replanned"
    other = debugging(debug_attempt_counter=6, replanned_tasks=("another",))
    assert take(other, ESCALATE, {"pr": GREEN_NEXT}).row == "escalate-locked"


@pytest.mark.parametrize(("title", "branch"), [
    ("feat: Implement New Feature", "feat/implement-new-feature"),
    ("fix(parser)!: Handle empty input", "fix/handle-empty-input"),
    ("Add the config loader", "pr/add-the-config-loader"),
    ("docs: README — ünïcode & symbols!!", "docs/readme-n-code-symbols"),
    ("Note: this is not a type: really", "note/this-is-not-a-type-really"),
    ("!!!", "pr/pr"),
])
def test_branch_names_come_from_the_pr_title(title: str, branch: str) -> None:
    assert branch_name(title) == branch


def test_a_replan_must_replace_the_task_keep_the_done_ones_and_end_with_verification() -> None:
    assert replan_problems(replanned(), REPLAN)[0] == []
    kept = plan(task("setup", "RED+", "GREEN+"), task("greet", "RED"), task("a", "RED"), task("b Verification", "RED"))
    assert "is still there" in replan_problems(kept, REPLAN)[0][0]
    lost = plan(task("setup", "RED", "GREEN"), *replanned().tasks[1:])
    assert "already DONE must stay" in replan_problems(lost, REPLAN)[0][0]
    assert "must be the verification task" in replan_problems(replanned(verification="greet 1b"), REPLAN)[0][0]
    one = plan(task("setup", "RED+", "GREEN+"), task("greet 1 (Verification)", "RED"))
    assert "at least two new tasks" in replan_problems(one, REPLAN)[0][0]


def test_state_files_name_the_bad_field_by_its_path() -> None:
    pr = plan(task("greet", "RED", "GREEN")).model_dump()
    pr["tasks"][0]["tdd_steps"][1]["status"] = "done"
    del pr["prTitle"]
    pr["tasks"][0]["owner"] = "me"
    read = parse_active_pr(json.dumps(pr), "ACTIVE_PR.json")
    assert isinstance(read, Invalid)
    assert read.message.startswith("ACTIVE_PR.json does not match its schema: ")
    assert "prTitle: missing (required)" in read.message
    assert "tasks[0].tdd_steps[1].status: input should be 'TODO' or 'DONE' (got \"done\")" in read.message
    assert "tasks[0].owner: not a field of this schema" in read.message
    twice = plan(task("greet", "RED"), task("farewell", "GREEN")).model_dump()
    twice["tasks"][1]["taskName"] = "greet"
    assert "'greet' appears more than once" in parse_active_pr(json.dumps(twice), "A").message  # type: ignore[union-attr]
    assert parse_active_pr("{not json", "A") == Invalid(message="A is not valid JSON: Expecting property name "
                                                               "enclosed in double quotes at line 1, column 2.")
    assert parse_active_pr(None, "A") is None
    bad = parse_orchestration('{"status": "SLEEPING", "main_branch": "main", "debug_attempt_counter": -1}', "S")
    assert isinstance(bad, Invalid) and "status: input should be" in bad.message
    assert "debug_attempt_counter: input should be greater than or equal to 0" in bad.message


def test_keep_means_the_plan_file_is_not_touched() -> None:
    assert take(debugging(), GET, {"pr": GREEN_NEXT}).pr is KEEP

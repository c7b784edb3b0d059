"""What the rows of the TDD job's transition table (:mod:`~anvil.core.workflows.tdd.rows`) check and decide:
conditions over a :class:`~anvil.core.workflows.tdd.machine.View`, and the steps they take. Pure functions."""

from __future__ import annotations

import dataclasses

from anvil.core.workflows.tdd import texts
from anvil.core.workflows.tdd.machine import (
    GitOutcome,
    Head,
    Reply,
    ReviewOutcome,
    RunOutcome,
    Step,
    View,
    branch_name,
    escalation_unlocked,
    mark_done,
    mark_task,
)
from anvil.core.workflows.tdd.schema import ActivePr, Halt, Invalid, PrTask, ReplanContext, TddStep

_CLEARED = {"debug_attempt_counter": 0, "last_error": None, "analysis_output": None, "guidance": None}


def ok(view: View, row: str, output: str, **changes: object) -> Step:
    state = view.state.model_copy(update=changes) if changes else view.state
    return Step(row, state, Reply("SUCCESS", output))


def fail(view: View, row: str, output: str) -> Step:
    return Step(row, view.state, Reply("FAILURE", output))


# -- INITIALIZING ----------------------------------------------------------------------------------------------------

def pending(view: View) -> bool:
    return isinstance(view.pr_read, ActivePr) and not view.pr_read.finished


def stale(view: View) -> bool:
    return isinstance(view.pr_read, ActivePr) and view.pr_read.finished


def init_task(view: View) -> Step:
    return ok(view, "init", texts.init_task(view.setup))


def init_stale(view: View) -> Step:
    return Step("init-stale", view.state, Reply("SUCCESS", texts.init_task(view.setup, removed_stale=True)), pr=None)


def resume(view: View) -> Step:
    status = "EXECUTING_TDD" if view.state.current_pr_branch else "CREATING_BRANCH"
    return Step("init-resume", view.to(status), Reply("SUCCESS", ""), then="get_task")


def pr_invalid(view: View) -> Step:
    read = view.pr_read
    message = read.message if isinstance(read, Invalid) else "ACTIVE_PR.json does not exist."
    return fail(view, "pr-invalid", texts.pr_problem(message, view.setup))


def plan_complete(view: View) -> Step:
    return Step("plan-complete", view.state.model_copy(update={"job_status": "complete"}),
                Reply("SUCCESS", texts.plan_complete(view.state.merged)), pr=None, then="finish")


def accepted(view: View) -> Step:
    return Step("init-submit", view.to("CREATING_BRANCH"), Reply("SUCCESS", texts.accepted(view.pr)))


def stale_submitted(view: View) -> Step:
    return fail(view, "init-stale-submit", texts.pr_problem(
        "Every task in ACTIVE_PR.json is DONE already; a new PR's steps start TODO.", view.setup))


# -- CREATING_BRANCH -------------------------------------------------------------------------------------------------

def branch(view: View) -> GitOutcome:
    return view.fact("branch")  # type: ignore[no-any-return]


def branch_created(view: View) -> Step:
    outcome = branch(view)
    state = view.to("EXECUTING_TDD", current_pr_branch=branch_name(view.pr.prTitle),
                    last_commit_hash=outcome.commit or view.state.last_commit_hash)
    return Step("branch", state, Reply("SUCCESS", outcome.message), then="get_task")


def branch_dirty(view: View) -> Step:
    return fail(view, "branch-dirty", texts.dirty_tree(branch(view).message))


def git_halt(view: View, row: str, outcome: GitOutcome, branch: str = "") -> Step:
    if outcome.problem == "conflict":
        message = texts.merge_conflict(branch, view.state.main_branch, view.setup.job_dir)
        halt = Halt(kind="merge_conflict", message=message, branch=branch)
    else:
        message = texts.git_halt(outcome.message)
        halt = Halt(kind="git", message=message, branch=branch, resume_at=view.state.status)
    return Step(row, view.to("HALTED", halt=halt), Reply("FAILURE", message), then="pause")


# -- EXECUTING_TDD and DEBUGGING -------------------------------------------------------------------------------------

def next_step(view: View) -> Step:
    at = view.step_at
    assert at is not None
    pr = mark_task(view.pr, at[0], "IN_PROGRESS")
    return Step("step", view.state, Reply("SUCCESS", texts.step_task(pr, *at, view.state.guidance)), pr=pr)


def checkpoint(view: View) -> Step:
    tasks = [task for task in view.pr.tasks if task.status != "TODO"]
    return ok(view, "checkpoint-task", texts.checkpoint_task(tasks[-1] if tasks else view.pr.tasks[0]))


def head_of(view: View) -> Head:
    return view.fact("head")  # type: ignore[no-any-return]


def checkpoint_made(view: View) -> Step:
    """The checkpoint is committed. When it ends a task, the next task starts in a fresh conversation: what the
    model needs is in the files and in get_task, and each task gets its own budget of model calls."""
    commit = head_of(view).commit
    step = ok(view, "checkpoint", f"Checkpoint {commit[:12]} recorded. Call get_task for the next step.",
              checkpoint_due=False, last_commit_hash=commit)
    at = view.step_at
    finished = [task for task in view.pr.tasks if task.done]
    if at is None or at[1] != 0 or not finished:
        return step
    done = view.pr.tasks[at[0] - 1] if at[0] > 0 else finished[-1]
    return dataclasses.replace(step, reply=Reply("SUCCESS", f"Task \"{done.taskName}\" is done and committed "
                                                            f"({commit[:12]})."), then="reset")


def usage_problem(view: View) -> str | None:
    """What makes a submission unfit for the current step (before anything runs), or None."""
    sub = view.sub
    if sub.analysis_decision is not None:
        if sub.test_command or sub.expectation:
            return ("give either a test run (test_command, expectation) or an analysis_decision, not both. The "
                    "analysis_decision answers a NEEDS_ANALYSIS result.")
        if view.state.analysis_output is None:
            return "there is no NEEDS_ANALYSIS result to decide on: run the step's test with submit_work first."
        return None
    if sub.expectation is None:
        return "say what you expect of the test run: expectation PASS or FAIL (a RED step expects FAIL)."
    expected = "FAIL" if view.step.type == "RED" else "PASS"
    if sub.expectation != expected:
        return (f"this is a {view.step.type} step, whose test is expected to {expected}; submit with expectation "
                f"{expected}.")
    if not (sub.test_command or view.setup.test_command):
        return "give the test_command to run: this project has no test command anvil could find."
    return None


def usage(view: View) -> Step:
    return fail(view, "usage", texts.usage(usage_problem(view) or ""))


def ran(view: View, probe: str) -> RunOutcome:
    return view.fact(probe)  # type: ignore[arg-type, no-any-return]


def needs_analysis(view: View) -> Step:
    run = ran(view, "test")
    return Step("needs-analysis", view.state.model_copy(update={"analysis_output": run.output}),
                Reply("NEEDS_ANALYSIS", texts.needs_analysis(run)))


def done(view: View, row: str) -> Step:
    """The current step is DONE (a RED step judged right, a GREEN or REFACTOR step through the gate); out of
    DEBUGGING, with the counter cleared."""
    step = view.step
    checkpoint = step.type != "RED"
    pr = mark_done(view.pr, view.step_at)  # type: ignore[arg-type]
    state = view.to("EXECUTING_TDD", checkpoint_due=checkpoint, **_CLEARED)
    gate = view.facts.get("preflight")
    return Step(row, state, Reply("SUCCESS", texts.step_done(step.type, checkpoint, gate)), pr=pr)


def failure(view: View, row: str, output: str, what: str) -> Step:
    state = view.to("DEBUGGING", last_error=output, analysis_output=None,
                    debug_attempt_counter=view.state.debug_attempt_counter + 1)
    return Step(row, state, Reply("FAILURE", texts.failed(RunOutcome("", False, output), what)))


def analysed_wrong(view: View) -> Step:
    return failure(view, "analysis-failure", view.state.analysis_output or "", "The RED step's test")


def test_failed(view: View) -> Step:
    return failure(view, "test-failed", ran(view, "test").output, f"`{ran(view, 'test').command}`")


def preflight_failed(view: View) -> Step:
    return failure(view, "preflight-failed", ran(view, "preflight").output, "The preflight gate")


def debug_task(view: View) -> Step:
    at = view.step_at
    task = view.pr.tasks[at[0]] if at is not None else None
    replanned = task is not None and task.taskName in view.state.replanned_tasks
    return ok(view, "debug", texts.debug_task(view.state, view.limits, task, replanned))


# -- escape hatches --------------------------------------------------------------------------------------------------

def task_name(view: View) -> str | None:
    at = view.step_at
    return view.pr.tasks[at[0]].taskName if at is not None else None


def scope_unlocked(view: View) -> bool:
    return view.state.debug_attempt_counter >= view.limits.scope_reduction_after


def reduce_scope(view: View) -> Step:
    t, _ = view.step_at  # type: ignore[misc]
    task = view.pr.tasks[t]
    goal = "\n".join(f"   - {step.type}: {step.description}" for step in task.tdd_steps)
    replan = ReplanContext(original_task=task.taskName, goal=goal, error=view.state.last_error or "",
                           done_tasks=tuple(k.taskName for k in view.pr.tasks if k.done),
                           task_names=tuple(k.taskName for k in view.pr.tasks))
    state = view.to("REPLANNING", replan=replan, analysis_output=None, checkpoint_due=False)
    return Step("scope-reduction", state, Reply("SUCCESS", texts.scope_reduced(replan, view.setup)),
                pr=mark_task(view.pr, t, "ERROR"), effects=("reset_hard",), then="reset")


def escalate(view: View) -> Step:
    return Step("escalate", view.state.model_copy(update={"escalation": view.trigger.report.strip()}),
                Reply("SUCCESS", texts.escalated()), then="pause")


def escalation_open(view: View) -> bool:
    name = task_name(view) if view.state.status == "DEBUGGING" else None
    return view.state.status == "DEBUGGING" and escalation_unlocked(view.state, view.limits, name)


def escalation_locked(view: View) -> Step:
    name = task_name(view) if view.state.status == "DEBUGGING" else None
    replanned = name in view.state.replanned_tasks
    return fail(view, "escalate-locked",
                 texts.escalation_locked(view.state.debug_attempt_counter, view.limits, replanned))


# -- REPLANNING ------------------------------------------------------------------------------------------------------

def replan_problems(pr: ActivePr, replan: ReplanContext) -> tuple[list[str], tuple[str, ...]]:
    """What is wrong with a re-planned ACTIVE_PR.json (nothing: it is accepted), and the names of its new tasks."""
    names = [task.taskName for task in pr.tasks]
    new = tuple(name for name in names if name not in replan.task_names)
    by_name = {task.taskName: task for task in pr.tasks}
    problems = []
    if replan.original_task in names:
        problems.append(f"the original task \"{replan.original_task}\" is still there: replace it with the new tasks")
    lost = [name for name in replan.done_tasks if name not in by_name or not by_name[name].done]
    if lost:
        problems.append(f"the tasks already DONE must stay as they are: {', '.join(lost)}")
    if len(new) < 2:
        problems.append("write at least two new tasks: the smaller ones, then the verification task")
        return problems, new
    first, last = by_name[new[0]], by_name[new[-1]]
    history = first.breakdownHistory
    if history is None or history.originalTaskName != replan.original_task:
        problems.append(f"the first new task (\"{first.taskName}\") needs breakdownHistory with originalTaskName "
                        f"\"{replan.original_task}\" and a justification")
    if "verification" not in last.taskName.lower() or last.tdd_steps[0].type != "RED":
        problems.append(f"the last new task (\"{last.taskName}\") must be the verification task: \"Verification\" in "
                        "its taskName, and a first RED step recreating the original task's test")
    if any(step.status != "TODO" for name in new for step in by_name[name].tdd_steps):
        problems.append("the new tasks' steps start TODO")
    return problems, new


def replan_valid(view: View) -> bool:
    replan = view.state.replan
    return replan is not None and isinstance(view.pr_read, ActivePr) and not replan_problems(view.pr, replan)[0]


def replanned(view: View) -> Step:
    _, new = replan_problems(view.pr, view.state.replan)  # type: ignore[arg-type]
    state = view.to("EXECUTING_TDD", replan=None, replanned_tasks=new, checkpoint_due=False, **_CLEARED)
    return Step("replan-submit", state, Reply("SUCCESS", texts.replan_accepted(new)))


def replan_rejected(view: View) -> Step:
    if view.state.replan is None:
        return fail(view, "replan-rejected", "The re-plan context is gone from the state; escalate to the person.")
    problems, _ = replan_problems(view.pr, view.state.replan)
    return fail(view, "replan-rejected", "The new plan is not accepted: " + "; ".join(problems) + ".")


def replan_task(view: View) -> Step:
    replan = view.state.replan
    text = texts.replan_task(replan, view.setup) if replan is not None else texts.nothing_to_submit("REPLANNING")
    return ok(view, "replan", text)


# -- CODE_REVIEW to MERGING_BRANCH ------------------------------------------------------------------------------------

def review(view: View) -> ReviewOutcome:
    return view.fact("review")  # type: ignore[no-any-return]


def approved(view: View) -> Step:
    rounds = view.state.review_rounds + 1
    return Step("review-approved", view.to("AWAITING_FINALIZATION", review_rounds=rounds),
                Reply("SUCCESS", texts.review_approved(rounds)), then="get_task")


def findings(view: View) -> Step:
    rounds = view.state.review_rounds + 1
    findings = review(view).findings
    tasks = tuple(PrTask(taskName=f"Review {rounds}.{n}: {f.title}"[:200],
                         tdd_steps=(TddStep(type="GREEN", description=texts.finding_step(f)),))
                  for n, f in enumerate(findings, start=1))
    pr = view.pr.model_copy(update={"tasks": (*view.pr.tasks, *tasks)})
    return Step("review-findings", view.to("EXECUTING_TDD", review_rounds=rounds),
                Reply("SUCCESS", texts.review_findings(rounds, findings)), pr=pr, then="get_task")


def review_failed(view: View) -> Step:
    return Step("review-failed", view.state, Reply("FAILURE", texts.review_failed(review(view).error)),
                then="pause")


def squashed(view: View) -> Step:
    head = head_of(view)
    return Step("finalize", view.to("FINALIZE_COMPLETE", last_commit_hash=head.commit),
                Reply("SUCCESS", texts.finalized(head.commit)))


def not_squashed(view: View) -> Step:
    head = head_of(view)
    return fail(view, "finalize-wrong", texts.squash_wrong(head.ahead, view.state.main_branch, head.status))


def plan(view: View) -> GitOutcome:
    return view.fact("plan")  # type: ignore[no-any-return]


def merge(view: View) -> GitOutcome:
    return view.fact("merge")  # type: ignore[no-any-return]


def merged(view: View) -> Step:
    title = view.pr.prTitle if isinstance(view.pr_read, ActivePr) else view.state.current_pr_branch or "the PR"
    state = view.to("INITIALIZING", current_pr_branch=None, last_commit_hash=merge(view).commit or None,
                    pr_number=view.state.pr_number + 1, merged=(*view.state.merged, title), review_rounds=0,
                    replanned_tasks=(), replan=None, checkpoint_due=False, escalation=None, **_CLEARED)
    return Step("merge", state, Reply("SUCCESS", texts.merged(merge(view).message, title)),
                pr=None, then="reset")


def halted(view: View) -> Step:
    halt = view.state.halt
    return Step("halted", view.state, Reply("FAILURE", texts.halted(halt.message if halt else "")), then="pause")


def always(view: View) -> bool:
    return True


def invalid_pr(view: View) -> bool:
    return not isinstance(view.pr_read, ActivePr)


def nothing(view: View) -> Step:
    return fail(view, "nothing-to-submit", texts.nothing_to_submit(view.state.status))

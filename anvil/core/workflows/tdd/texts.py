"""What a TDD job says to the model and to the person: tasks, verdicts, guidance, the system-prompt layer. Words
only; the rules are in :mod:`~anvil.core.workflows.tdd.rows`."""

from __future__ import annotations

from anvil.core.workflows.tdd.machine import Finding, Limits, RunOutcome, Setup
from anvil.core.workflows.tdd.schema import ACTIVE_PR, ACTIVE_PR_SCHEMA, ActivePr, Orchestration, PrTask, ReplanContext

_HOW = {
    "RED": "Write the test that shows the behaviour is missing, and nothing else: no implementation yet. Then call "
           "submit_work with the test_command that runs it and expectation FAIL; you then judge whether it failed "
           "for the intended reason.",
    "GREEN": "Write the least code that makes the test pass. Then call submit_work with the test_command and "
             "expectation PASS; anvil then runs the preflight gate too.",
    "REFACTOR": "Improve the code (names, duplication, structure) without changing what it does. Then call "
                "submit_work with the test_command and expectation PASS; anvil then runs the preflight gate too.",
}


def init_task(setup: Setup, removed_stale: bool = False) -> str:
    stale = (f"The old {ACTIVE_PR} had every task DONE, so it was removed. " if removed_stale else "")
    return (f"{stale}Read the master plan at {setup.plan_path}, find the first PR not marked [DONE], and write its "
            f"engineering plan to {setup.job_dir}/{ACTIVE_PR} (with write_file). Break the PR into small tasks, each "
            "with its own RED, GREEN and REFACTOR steps (a REFACTOR step may be left out when there is nothing to "
            "improve); every status starts TODO. The file must match this JSON schema:\n\n"
            f"{ACTIVE_PR_SCHEMA}\n\nThen call submit_work(summary=...). If every PR of the master plan is marked "
            "[DONE] already, call submit_work(summary=..., plan_complete=true) instead.")


def pr_problem(message: str, setup: Setup) -> str:
    return f"{message} Fix {setup.job_dir}/{ACTIVE_PR} (the schema is in the task get_task gave), then go on."


def accepted(pr: ActivePr) -> str:
    steps = sum(len(task.tdd_steps) for task in pr.tasks)
    return (f"{ACTIVE_PR} accepted: \"{pr.prTitle}\", {len(pr.tasks)} tasks, {steps} steps. Call get_task: anvil "
            "creates the PR branch and gives you the first step.")


def nothing_to_submit(status: str) -> str:
    return f"There is nothing to submit in {status}: call get_task for your task."


def dirty_tree(status: str) -> str:
    return (f"The PR branch cannot be created: the working tree has changes.\n{status}\nWhile a PR is being planned "
            f"only {ACTIVE_PR} changes. Undo the other changes (git checkout -- FILE; remove new files), then call "
            "get_task again.")


def step_task(pr: ActivePr, t: int, s: int, guidance: str | None = None) -> str:
    task = pr.tasks[t]
    step = task.tdd_steps[s]
    done = sum(st.status == "DONE" for tk in pr.tasks for st in tk.tdd_steps)
    total = sum(len(tk.tdd_steps) for tk in pr.tasks)
    text = (f"Your goal is to complete the next TDD step ({done + 1} of {total} in \"{pr.prTitle}\").\n"
            f"Task {t + 1}: {task.taskName}\nStep {s + 1} ({step.type}): {step.description}\n\n{_HOW[step.type]} "
            "Make one attempt, then report with submit_work: do not iterate on your own.")
    return text + _guidance(guidance)


def _guidance(guidance: str | None) -> str:
    return f"\n\nThe person's guidance (after your escalation):\n{guidance}" if guidance else ""


def checkpoint_task(task: PrTask) -> str:
    return ("The last step passed. Make a safety checkpoint commit of all changes now: git add -A && git commit -m "
            f"\"checkpoint: {task.taskName}\" (with run_command). Then call submit_work(summary=...).")


def checkpoint_missing(status: str) -> str:
    return f"No checkpoint yet: the working tree still has changes.\n{status}\nCommit them all, then submit_work."


def usage(problem: str) -> str:
    return f"Not run: {problem}"


def needs_analysis(run: RunOutcome) -> str:
    return (f"`{run.command}` {'passed' if run.passed else 'failed'}. Analyse the output below: did the test fail "
            "for the intended reason (the behaviour is missing), not for another (a typo, an import error, a broken "
            "fixture)? Call submit_work(summary=..., analysis_decision=\"SUCCESS\") if it did, "
            f"analysis_decision=\"FAILURE\" if not.\n\n{run.output}")


def step_done(kind: str, checkpoint: bool, gate: RunOutcome | None = None) -> str:
    following = "a checkpoint commit" if checkpoint else "the next step"
    passed = ""
    if gate is not None:
        passed = f" The test passed, and so did the preflight gate ({gate.command or gate.output})."
    return f"The {kind} step is DONE.{passed} Call get_task for {following}."


def failed(run: RunOutcome, what: str) -> str:
    return (f"{what} failed, so the step is not done: the job is DEBUGGING. Call get_task for the debugging task."
            f"\n\n{run.output}")


def debug_guidance(counter: int, limits: Limits, replanned: bool) -> str:
    """The strategy for attempt ``counter`` on one step: hypothesise, instrument, reduce the scope, escalate."""
    if counter >= limits.escalate_after or (replanned and counter >= limits.scope_reduction_after):
        why = "even the smaller re-planned task keeps failing" if counter < limits.escalate_after else \
            "the attempts are used up"
        return (f"Stop debugging: {why}. escalate_for_external_help is unlocked: write a markdown report (the goal, "
                "what you tried, the final error, your analysis) and call it; the person will answer.")
    if counter >= limits.scope_reduction_after:
        return ("This task is most likely too large or too vague to finish in one piece. request_scope_reduction is "
                "unlocked: it reverts your changes to the last checkpoint and has you re-plan the task in smaller, "
                "verifiable steps. Prefer it to another attempt.")
    if counter >= min(3, limits.scope_reduction_after):
        return ("Simple fixes have not worked: change strategy. Instrument the code (logging, assertions, printing "
                "intermediate values) to gather facts about what really happens, run it through submit_work, and "
                "let the output decide the next fix. Remove the instrumentation once the cause is found.")
    return ("Form one hypothesis about the cause from the error below, make the smallest fix that tests it, and "
            "submit_work again.")


def debug_task(state: Orchestration, limits: Limits, task: PrTask | None, replanned: bool) -> str:
    counter = state.debug_attempt_counter
    where = f" on task \"{task.taskName}\"" if task is not None else ""
    strategy = ("Follow the person's guidance (after the error below): it answers your escalation. Make the fix it "
                "points to, then submit_work." if state.guidance else debug_guidance(counter, limits, replanned))
    return (f"Your previous submission failed. Your new primary goal is to fix the bug{where} (failed attempts: "
            f"{counter}).\n\nStrategy: {strategy}\n\nThe last error, verbatim:\n"
            f"{state.last_error or '(none recorded)'}{_guidance(state.guidance)}")


def scope_locked(counter: int, limits: Limits) -> str:
    left = limits.scope_reduction_after - counter
    return (f"request_scope_reduction is locked: it unlocks after {limits.scope_reduction_after} failed attempts on "
            f"a step, and there have been {counter}; {left} more to go. Keep debugging: get_task has the guidance.")


def escalation_locked(counter: int, limits: Limits, replanned: bool) -> str:
    threshold = limits.scope_reduction_after if replanned else limits.escalate_after
    return (f"escalate_for_external_help is locked: it unlocks after {threshold} failed attempts on a step, and "
            f"there have been {counter}; {threshold - counter} more to go. Keep debugging: get_task has the "
            "guidance.")


def replanned_twice(task: str) -> str:
    return (f"\"{task}\" already comes from a re-plan, so it is not broken down again: escalate_for_external_help "
            "once it unlocks.")


def scope_reduced(replan: ReplanContext, setup: Setup) -> str:
    return "Your changes since the last checkpoint were reverted (git reset --hard HEAD).\n\n" + replan_task(replan,
                                                                                                            setup)


def replan_task(replan: ReplanContext, setup: Setup) -> str:
    return (f"Your previous attempt failed and all changes have been reverted. Your new assignment is to create a "
            "more granular plan.\n\n"
            f"1. Analyse the original goal, task \"{replan.original_task}\":\n{replan.goal}\n   and the final error:\n"
            f"{replan.error}\n"
            "2. Break the original task down into the smallest verifiable tasks, each with its own RED, GREEN and "
            "REFACTOR steps.\n"
            "3. The last new task must be a verification task (its taskName says \"Verification\"): it proves the "
            "tasks before it achieve the original goal, and its RED step recreates the original task's RED step.\n"
            f"4. Update {setup.job_dir}/{ACTIVE_PR}: replace the original task with the new ones (keep the other "
            "tasks as they are). The first new task carries breakdownHistory: {\"originalTaskName\": \""
            f"{replan.original_task}\", \"justification\": \"why the new plan is smaller\"}}.\n"
            "Then call submit_work(summary=...).")


def replan_accepted(names: tuple[str, ...]) -> str:
    return (f"The new plan is accepted: {len(names)} tasks replace the failed one ({', '.join(names)}). The debug "
            "counter starts again. Call get_task for the first step.")


def review_approved(rounds: int) -> str:
    return f"The code review (round {rounds}) found nothing to change: the PR is approved."


def review_findings(rounds: int, findings: tuple[Finding, ...]) -> str:
    lines = "\n".join(f"- {_where(f)}{f.title}: {f.detail}" for f in findings)
    return (f"The code review (round {rounds}) found {len(findings)} thing{'s' if len(findings) != 1 else ''} to "
            f"change; each is a task now, and a fresh review follows them:\n{lines}")


def finding_step(finding: Finding) -> str:
    return (f"Address the review finding {_where(finding)}\"{finding.title}\": {finding.detail}. Add or adjust a "
            "test when it is a bug.")


def _where(finding: Finding) -> str:
    if not finding.file:
        return ""
    return f"({finding.file}{f':{finding.line}' if finding.line else ''}) "


def review_failed(error: str) -> str:
    return (f"The code review could not be done: {error}. Fix what it says (for a review_command: it must print "
            "{\"findings\": [...]} as JSON), then send a message to try again.")


def squash_task(main: str, title: str) -> str:
    return ("All tasks are done and reviewed. Squash the PR's commits into one, with the PR title as its message:\n"
            f"  git reset --soft {main} && git commit -m \"{title}\"\n(with run_command). Then call "
            "submit_work(summary=...): anvil checks the branch has exactly one commit.")


def squash_wrong(ahead: int, main: str, status: str) -> str:
    if ahead == 1:
        return f"The commit is there, but the working tree still has changes:\n{status}\nCommit or undo them."
    return (f"The branch has {ahead} commits over {main}; it must have exactly one. Squash them (git reset --soft "
            f"{main} && git commit -m ...), then submit_work.")


def finalized(commit: str) -> str:
    return f"The branch is one commit, {commit[:12]}. Call get_task for the last step."


def plan_task(plan_path: str, title: str, commit: str) -> str:
    return (f"Update the master plan at {plan_path}: mark the PR \"{title}\" as [DONE] and add its commit hash "
            f"{commit[:12]} beside it. Change nothing else and do not commit: anvil commits the plan. Then call "
            "submit_work(summary=...).")


def plan_updated(message: str) -> str:
    return f"{message} Call get_task: anvil merges the branch."


def merged(message: str, title: str) -> str:
    return f"{message} The PR \"{title}\" is done. Call get_task for the next PR of the plan."


def merge_conflict(branch: str, main: str, job_dir: str) -> str:
    return (f"ERROR: the automated merge failed with a conflict. Resolve the conflict in branch '{branch}' and "
            f"merge it to {main} by hand. Then delete the branch and {job_dir}/{ACTIVE_PR}, and clear the halt "
            "(/workflow clear, or `anvil --workflow tdd --clear-halt`) before the job goes on with the next PR.")


def git_halt(message: str) -> str:
    return (f"The job stopped: {message} Put the repository right by hand, then clear the halt (/workflow clear, "
            "or `anvil --workflow tdd --clear-halt`) to go on.")


def halted(message: str) -> str:
    return f"The job is HALTED; nothing runs until the person clears it. {message}"


def escalated() -> str:
    return "Your report is with the person. Stop here: the job waits for their answer."


def plan_complete(merged_titles: tuple[str, ...]) -> str:
    done = f" This job merged: {', '.join(merged_titles)}." if merged_titles else ""
    return f"Every PR of the master plan is done.{done}"


# -- the conversation around the tools ------------------------------------------------------------------------------

def system_layer(job_id: str, state: Orchestration, setup: Setup, notes: str | None) -> str:
    """The job's section of the system prompt: stable while the job runs (it changes only at a new PR, a re-plan or
    a compaction), so the provider's prompt cache holds."""
    person = f"\n\n## The person's notes for this job\n\n{notes.strip()}" if notes and notes.strip() else ""
    return f"""# TDD job {job_id}: PR {state.pr_number} of the master plan ({setup.plan_path})

You implement the PRs of the master plan one at a time, test first, under a strict protocol. You never decide where
the work goes next: the job does. Your loop is:

1. Call get_task. It gives you exactly one task: a TDD step (RED, GREEN or REFACTOR), a checkpoint commit, a
   debugging briefing, a re-plan, a squash or a plan update.
2. Make one attempt at that task with the file tools (read, search, edit) and run_command for anything but tests.
3. Report with submit_work, then call get_task again. Do not iterate on your own, and do not work ahead.

Tests run only through submit_work (test_command and expectation): run_command refuses commands that run tests, and
run_tests is not offered. A RED step's run always comes back NEEDS_ANALYSIS: judge whether the test failed for the
intended reason and answer with analysis_decision. A passing GREEN or REFACTOR run also runs the preflight gate.
After {setup.limits.scope_reduction_after} failed attempts on a step request_scope_reduction unlocks, after
{setup.limits.escalate_after} escalate_for_external_help; get_task tells you when to use them.

The job's files are in `{setup.job_dir}/`: `{ACTIVE_PR}` (the current PR's plan: you write it when asked; anvil marks
steps DONE) and `ORCHESTRATION_STATE.json` (anvil's; never edit it). anvil creates and merges the PR branch itself;
you commit (checkpoints, the squash) only when get_task says so, and you never push.{person}"""


def brief(state: Orchestration, detail: str = "") -> str:
    where = f"The TDD job is at PR {state.pr_number} of the plan, in {state.status}."
    return f"{detail + ' ' if detail else ''}{where} Call get_task for your task."


def resume_brief(state: Orchestration, guidance: str, answered: bool) -> str:
    if answered:
        return (f"[anvil] The person answered your escalation:\n{guidance.strip()}\n\nThe job goes on in "
                f"{state.status}; get_task repeats the answer with your task. Call get_task.")
    text = f"[anvil] The TDD job goes on at PR {state.pr_number}, in {state.status}. Call get_task for your task."
    return text + (f"\n\nThe person says:\n{guidance.strip()}" if guidance.strip() else "")


def nudge(state: Orchestration) -> str:
    return (f"[anvil] The TDD job is not finished (PR {state.pr_number}, {state.status}). Call get_task for your "
            "task, do it, and report with submit_work. If you cannot go on, say why in one paragraph and stop: the "
            "person will be asked.")


def waiting(job_id: str, what: str, halted_state: bool) -> str:
    """What the person reads when the job stops for them."""
    if halted_state:
        return (f"Job {job_id} is HALTED: {what} Clear it with /workflow clear (or `anvil --workflow tdd "
                "--clear-halt`), then send a message (or `anvil -c`) to go on.")
    return (f"Job {job_id} needs you: the model escalated (its report is above). Your next message is its guidance "
            f"and the job goes on with it (headless: `anvil -p -c \"your guidance\"`).")

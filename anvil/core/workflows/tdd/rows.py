"""The transition table of the TDD job, row by row: the design's table (``goes_to`` is its next state), the rows it
implies (a plan that does not validate, a submission that does not fit the step, a locked escape hatch) and a
fallback for every trigger. :func:`~anvil.core.workflows.tdd.machine.decide` takes the first row that holds."""

from __future__ import annotations

from anvil.core.workflows.tdd import acts as a
from anvil.core.workflows.tdd import texts
from anvil.core.workflows.tdd.machine import Reply, Row, Step


def _tdd_rows(state: str) -> tuple[Row, ...]:
    """The submit_work rows EXECUTING_TDD and DEBUGGING share: a step verified (done, or back to debugging)."""
    prefix = "" if state == "EXECUTING_TDD" else "debug-"
    stays = state
    return (
        Row(f"{prefix}submit-usage", state, "submit_work", "The submission does not fit the step.", stays,
            lambda v: a.invalid_pr(v) or v.step_at is None or a.usage_problem(v) is not None,
            lambda v: a.pr_invalid(v) if a.invalid_pr(v) else (a.nothing(v) if v.step_at is None else a.usage(v))),
        Row(f"{prefix}red", state, "submit_work", "FAIL expectation (a RED step): the test runs.", stays,
            lambda v: v.sub.expectation == "FAIL" and a.ran(v, "test") is not None, a.needs_analysis),
        Row(f"{prefix}analysis-success", state, "submit_work", "analysis_decision SUCCESS.", "EXECUTING_TDD",
            lambda v: v.sub.analysis_decision == "SUCCESS", lambda v: a.done(v, "analysis-success")),
        Row(f"{prefix}analysis-failure", state, "submit_work", "analysis_decision FAILURE.", "DEBUGGING",
            lambda v: v.sub.analysis_decision == "FAILURE", a.analysed_wrong),
        Row(f"{prefix}test-failed", state, "submit_work", "Test fails unexpectedly.", "DEBUGGING",
            lambda v: not a.ran(v, "test").passed, a.test_failed),
        Row(f"{prefix}preflight-failed", state, "submit_work", "preflight check fails.", "DEBUGGING",
            lambda v: not a.ran(v, "preflight").passed, a.preflight_failed),
        Row(f"{prefix}passed", state, "submit_work", "Test passes AND preflight passes.", "EXECUTING_TDD",
            a.always, lambda v: a.done(v, "passed")),
    )


def _checkpoint_rows() -> tuple[Row, ...]:
    return (
        Row("checkpoint-task", "EXECUTING_TDD", "get_task", "A GREEN or REFACTOR step just passed.", "EXECUTING_TDD",
            lambda v: v.state.checkpoint_due and not a.invalid_pr(v), a.checkpoint),
        Row("checkpoint", "EXECUTING_TDD", "submit_work", "Checkpoint due and the tree is committed.",
            "EXECUTING_TDD", lambda v: v.state.checkpoint_due and a.head_of(v).clean, a.checkpoint_made),
        Row("checkpoint-missing", "EXECUTING_TDD", "submit_work", "Checkpoint due, changes not committed.",
            "EXECUTING_TDD", lambda v: v.state.checkpoint_due,
            lambda v: a.fail(v, "checkpoint-missing", texts.checkpoint_missing(a.head_of(v).status))),
    )


TABLE: tuple[Row, ...] = (
    Row("halted", "HALTED", "get_task", "Any.", "HALTED", a.always, a.halted),
    Row("halted-submit", "HALTED", "submit_work", "Any.", "HALTED", a.always, a.halted),
    Row("halted-scope", "HALTED", "request_scope_reduction", "Any.", "HALTED", a.always, a.halted),
    Row("halted-escalate", "HALTED", "escalate_for_external_help", "Any.", "HALTED", a.always, a.halted),
    # INITIALIZING
    Row("init", "INITIALIZING", "get_task", "ACTIVE_PR.json does not exist.", "INITIALIZING",
        lambda v: v.pr_read is None, a.init_task),
    Row("init-stale", "INITIALIZING", "get_task", "ACTIVE_PR.json has every task DONE (stale).", "INITIALIZING",
        a.stale, a.init_stale),
    Row("init-resume", "INITIALIZING", "get_task", "ACTIVE_PR.json has pending steps (interrupted).",
        "CREATING_BRANCH", a.pending, a.resume),
    Row("init-invalid", "INITIALIZING", "get_task", "ACTIVE_PR.json does not match the schema.", "INITIALIZING",
        a.always, a.pr_invalid),
    Row("plan-complete", "INITIALIZING", "submit_work", "Every PR of the plan is DONE (plan_complete).",
        "(the job is complete)", lambda v: v.sub.plan_complete and not a.pending(v), a.plan_complete),
    Row("init-submit", "INITIALIZING", "submit_work", "Agent has created ACTIVE_PR.json.", "CREATING_BRANCH",
        a.pending, a.accepted),
    Row("init-stale-submit", "INITIALIZING", "submit_work", "ACTIVE_PR.json has every task DONE.", "INITIALIZING",
        a.stale, a.stale_submitted),
    Row("init-invalid-submit", "INITIALIZING", "submit_work", "ACTIVE_PR.json is missing or invalid.", "INITIALIZING",
        a.always, a.pr_invalid),
    # CREATING_BRANCH
    Row("branch-no-pr", "CREATING_BRANCH", "get_task", "ACTIVE_PR.json is missing or invalid.", "CREATING_BRANCH",
        a.invalid_pr, a.pr_invalid),
    Row("branch", "CREATING_BRANCH", "get_task", "State is CREATING_BRANCH (branch created).", "EXECUTING_TDD",
        lambda v: a.branch(v).ok, a.branch_created),
    Row("branch-dirty", "CREATING_BRANCH", "get_task", "The working tree has changes.", "CREATING_BRANCH",
        lambda v: a.branch(v).problem == "dirty", a.branch_dirty),
    Row("branch-failed", "CREATING_BRANCH", "get_task", "A git command failed.", "HALTED",
        a.always, lambda v: a.git_halt(v, "branch-failed", a.branch(v))),
    # EXECUTING_TDD
    Row("step-no-pr", "EXECUTING_TDD", "get_task", "ACTIVE_PR.json is missing or invalid.", "EXECUTING_TDD",
        a.invalid_pr, a.pr_invalid),
    *_checkpoint_rows(),
    Row("step", "EXECUTING_TDD", "get_task", "TDD steps are TODO.", "EXECUTING_TDD",
        lambda v: v.step_at is not None, a.next_step),
    Row("all-done", "EXECUTING_TDD", "get_task", "All TDD steps in ACTIVE_PR.json are DONE.", "CODE_REVIEW",
        a.always, lambda v: Step("all-done", v.to("CODE_REVIEW"), Reply("SUCCESS", ""), then="get_task")),
    *_tdd_rows("EXECUTING_TDD"),
    # DEBUGGING
    Row("debug", "DEBUGGING", "get_task", "State is DEBUGGING.", "DEBUGGING", a.always, a.debug_task),
    *_tdd_rows("DEBUGGING"),
    Row("scope-replanned", "DEBUGGING", "request_scope_reduction", "The task comes from a re-plan.", "DEBUGGING",
        lambda v: not a.invalid_pr(v) and a.task_name(v) in v.state.replanned_tasks,
        lambda v: a.fail(v, "scope-replanned", texts.replanned_twice(a.task_name(v) or ""))),
    Row("scope-reduction", "DEBUGGING", "request_scope_reduction", "debug_attempt_counter threshold is met.",
        "REPLANNING", lambda v: a.scope_unlocked(v) and not a.invalid_pr(v) and v.step_at is not None, a.reduce_scope),
    # REPLANNING
    Row("replan", "REPLANNING", "get_task", "State is REPLANNING.", "REPLANNING", a.always, a.replan_task),
    Row("replan-invalid", "REPLANNING", "submit_work", "ACTIVE_PR.json is missing or invalid.", "REPLANNING",
        a.invalid_pr, a.pr_invalid),
    Row("replan-submit", "REPLANNING", "submit_work", "Agent submits an updated ACTIVE_PR.json.", "EXECUTING_TDD",
        a.replan_valid, a.replanned),
    Row("replan-rejected", "REPLANNING", "submit_work", "The new plan breaks the re-plan rules.", "REPLANNING",
        a.always, a.replan_rejected),
    # CODE_REVIEW
    Row("review-no-pr", "CODE_REVIEW", "get_task", "ACTIVE_PR.json is missing or invalid.", "CODE_REVIEW",
        a.invalid_pr, a.pr_invalid),
    Row("review-failed", "CODE_REVIEW", "get_task", "The review could not be done.", "CODE_REVIEW",
        lambda v: bool(a.review(v).error), a.review_failed),
    Row("review-approved", "CODE_REVIEW", "get_task", "Review is approved (no findings).", "AWAITING_FINALIZATION",
        lambda v: not a.review(v).findings, a.approved),
    Row("review-findings", "CODE_REVIEW", "get_task", "Review has findings.", "EXECUTING_TDD", a.always, a.findings),
    # AWAITING_FINALIZATION
    Row("squash", "AWAITING_FINALIZATION", "get_task", "State is AWAITING_FINALIZATION.", "AWAITING_FINALIZATION",
        a.always, lambda v: a.ok(v, "squash", texts.squash_task(v.state.main_branch, v.pr.prTitle)
                               if not a.invalid_pr(v) else texts.squash_task(v.state.main_branch, "PR title"))),
    Row("finalize", "AWAITING_FINALIZATION", "submit_work", "Exactly one commit over main, tree clean.",
        "FINALIZE_COMPLETE", lambda v: a.head_of(v).ahead == 1 and a.head_of(v).clean, a.squashed),
    Row("finalize-wrong", "AWAITING_FINALIZATION", "submit_work", "Not one commit, or changes left.",
        "AWAITING_FINALIZATION", a.always, a.not_squashed),
    # FINALIZE_COMPLETE
    Row("plan-task", "FINALIZE_COMPLETE", "get_task", "State is FINALIZE_COMPLETE.", "FINALIZE_COMPLETE", a.always,
        lambda v: a.ok(v, "plan-task", texts.plan_task(v.setup.plan_path, v.pr.prTitle if not a.invalid_pr(v) else
                                                      "this PR", v.state.last_commit_hash or ""))),
    Row("plan-updated", "FINALIZE_COMPLETE", "submit_work", "Agent confirms the master plan is updated.",
        "PLAN_UPDATED", lambda v: a.plan(v).ok,
        lambda v: Step("plan-updated", v.to("PLAN_UPDATED"), Reply("SUCCESS", texts.plan_updated(a.plan(v).message)))),
    Row("plan-not-updated", "FINALIZE_COMPLETE", "submit_work", "The master plan is not marked.",
        "FINALIZE_COMPLETE", a.always, lambda v: a.fail(v, "plan-not-updated", a.plan(v).message)),
    # PLAN_UPDATED, MERGING_BRANCH
    Row("to-merge", "PLAN_UPDATED", "get_task", "State is PLAN_UPDATED.", "MERGING_BRANCH", a.always,
        lambda v: Step("to-merge", v.to("MERGING_BRANCH"), Reply("SUCCESS", ""), then="get_task")),
    Row("merge", "MERGING_BRANCH", "get_task", "Merge to main is successful.", "INITIALIZING",
        lambda v: a.merge(v).ok, a.merged),
    Row("merge-conflict", "MERGING_BRANCH", "get_task", "Merge to main fails (conflict).", "HALTED",
        a.always, lambda v: a.git_halt(v, "merge-conflict", a.merge(v), v.state.current_pr_branch or "")),
    # escape hatches, in any state; and the fallbacks
    Row("escalate", None, "escalate_for_external_help", "debug_attempt_counter threshold is met.", "(paused)",
        a.escalation_open, a.escalate),
    Row("escalate-locked", None, "escalate_for_external_help", "Called too early.", "(unchanged)", a.always,
        a.escalation_locked),
    Row("scope-locked", None, "request_scope_reduction", "Called too early.", "(unchanged)", a.always,
        lambda v: a.fail(v, "scope-locked", texts.scope_locked(v.state.debug_attempt_counter, v.limits))),
    Row("nothing-to-submit", None, "submit_work", "Nothing to submit in this state.", "(unchanged)", a.always,
        a.nothing),
)

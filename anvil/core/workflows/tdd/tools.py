"""The TDD job's tools. ``get_task`` and ``submit_work`` carry the orchestration: the model asks for its task, makes
one attempt, and reports; the job's state machine decides what comes next. ``request_scope_reduction`` and
``escalate_for_external_help`` are the escape hatches, locked until enough attempts failed. ``report_review`` is
the review sub-agent's: how it hands in its findings.

Each asks the job (:class:`TddJob`) and returns what it answers; the job hands the loop the transition, if any.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from pydantic import Field

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult
from anvil.core.workflows.tdd.machine import Finding, Submission, Trigger


class TddJob(Protocol):
    async def handle(self, trigger: Trigger, ctx: ToolContext) -> ToolResult: ...

    def test_command_for(self, submission: Submission) -> str | None: ...


class _JobTool(Tool):
    main_agent_only = True

    def __init__(self, job: TddJob) -> None:
        self.job = job


class GetTask(_JobTool):
    name = "get_task"
    description = ("Get your current task from the TDD job: the next step, a debugging briefing, a re-plan, a review's "
                   "findings, or a finalization step. Call it whenever you need to know what to do next; do exactly "
                   "that task, then report with submit_work.")
    kind = "other"

    def phase(self, args: Any) -> str:
        return "Getting the next task"

    async def run(self, args: ToolArgs, ctx: ToolContext) -> ToolResult:
        return await self.job.handle(Trigger("get_task"), ctx)


class SubmitWorkArgs(ToolArgs):
    summary: str = Field(description="What you did in this attempt, briefly, and what you expect.")
    test_command: str | None = Field(default=None, description=(
        "The command that runs the step's test(s), e.g. `pytest -q tests/test_x.py`. Left out: the project's test "
        "command. Leave it out when you give an analysis_decision."))
    expectation: Literal["PASS", "FAIL"] | None = Field(default=None, description=(
        "What you expect of the test run: FAIL for a RED step (the test shows the behaviour is missing), PASS for "
        "GREEN and REFACTOR steps. Leave it out when you give an analysis_decision."))
    analysis_decision: Literal["SUCCESS", "FAILURE"] | None = Field(default=None, description=(
        "Your judgment of a NEEDS_ANALYSIS result: SUCCESS if the test failed for the intended reason, FAILURE if "
        "not."))
    plan_complete: bool = Field(default=False, description=(
        "Only when asked to plan the next PR: true when every PR of the master plan is marked [DONE] already."))


class SubmitWork(_JobTool):
    name = "submit_work"
    description = ("The only way to verify work in this job. Two uses: run the step's test (test_command and "
                   "expectation), or confirm your analysis of a NEEDS_ANALYSIS result (analysis_decision). For tasks "
                   "that are not tests (a plan written, a commit made) give only the summary. A passing PASS run also "
                   "runs the project's preflight gate. Returns {\"status\": SUCCESS | FAILURE | NEEDS_ANALYSIS, "
                   "\"output\": ...}. Never run tests with run_command: only submit_work runs them.")
    Args = SubmitWorkArgs
    kind = "execute"
    mutates = True  # the test runs project code
    approval = "command"
    runs_tests = True

    def command(self, args: SubmitWorkArgs) -> str | None:
        submission = _submission(args)
        return self.job.test_command_for(submission) if args.expectation else None

    def phase(self, args: Any) -> str:
        if args.analysis_decision:
            return f"Submitting analysis: {args.analysis_decision}"
        return f"Submitting work (expecting {args.expectation})" if args.expectation else "Submitting work"

    async def run(self, args: SubmitWorkArgs, ctx: ToolContext) -> ToolResult:
        result = await self.job.handle(Trigger("submit_work", _submission(args)), ctx)
        status = (result.data or {}).get("status", "SUCCESS" if result.ok else "FAILURE")
        result.output = json.dumps({"status": status, "output": result.output}, ensure_ascii=False)
        result.summary = status
        return result


def _submission(args: SubmitWorkArgs) -> Submission:
    return Submission(args.summary, (args.test_command or "").strip() or None, args.expectation,
                      args.analysis_decision, args.plan_complete)


class RequestScopeReduction(_JobTool):
    name = "request_scope_reduction"
    description = ("Escape hatch for a task that is too large or too vague to finish: reverts every change since the "
                   "last checkpoint commit and gives you the task of re-planning it in smaller, verifiable tasks. "
                   "Locked until several debugging attempts have failed; called early, it says how many remain.")
    kind = "other"
    mutates = True  # it reverts the working tree

    def phase(self, args: Any) -> str:
        return "Requesting a scope reduction"

    async def run(self, args: ToolArgs, ctx: ToolContext) -> ToolResult:
        return await self.job.handle(Trigger("request_scope_reduction"), ctx)


class EscalateArgs(ToolArgs):
    markdown_report: str = Field(min_length=1, description=(
        "A markdown report for the person: the original goal, the steps and strategies you tried, the final error "
        "verbatim, and your analysis of the problem."))


class EscalateForExternalHelp(_JobTool):
    name = "escalate_for_external_help"
    description = ("Final escape hatch when you are stuck: stops the job and shows your report to the person, who "
                   "answers with guidance; the job then goes on with it. Locked until many debugging attempts have "
                   "failed (or a re-planned task fails again); called early, it says how many remain.")
    Args = EscalateArgs
    kind = "other"

    def phase(self, args: Any) -> str:
        return "Escalating to the person"

    async def run(self, args: EscalateArgs, ctx: ToolContext) -> ToolResult:
        return await self.job.handle(Trigger("escalate_for_external_help", report=args.markdown_report), ctx)


class FindingArgs(ToolArgs):
    title: str = Field(min_length=1, description="The problem in a few words.")
    detail: str = Field(min_length=1, description="What is wrong, why it matters, and what to change.")
    file: str | None = Field(default=None, description="The file it is in, relative to the project.")
    line: int | None = Field(default=None, description="The line it is at.")


class ReportReviewArgs(ToolArgs):
    findings: list[FindingArgs] = Field(description="What must change before the PR is merged; an empty list "
                                                    "approves it.")


class ReportReview(Tool):
    """The review sub-agent's way to hand in its findings (the job reads them from :attr:`findings`)."""

    name = "report_review"
    description = ("Hand in your review: the findings that must be fixed before the PR is merged, or an empty list to "
                   "approve it. This ends the review; call it exactly once, last.")
    Args = ReportReviewArgs
    kind = "think"

    def __init__(self) -> None:
        self.findings: tuple[Finding, ...] | None = None

    def phase(self, args: Any) -> str:
        return f"Reporting {len(args.findings)} findings" if args.findings else "Approving the PR"

    async def run(self, args: ReportReviewArgs, ctx: ToolContext) -> ToolResult:
        self.findings = tuple(Finding(f.title.strip(), f.detail.strip(), (f.file or "").strip() or None, f.line)
                              for f in args.findings)
        verdict = f"{len(self.findings)} findings recorded" if self.findings else "The PR is approved"
        return ToolResult(f"{verdict}. Your review is handed in; nothing more to do.", summary=verdict, end_turn=True)

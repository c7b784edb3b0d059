"""What a TDD job observes for its state machine: ACTIVE_PR.json, a test run and the preflight gate (in the session's
sandbox, like any command the model's code runs in), a code review, and git (through :mod:`.git`, whose sequences
are the orchestrator's actions: creating the branch, marking the plan, merging).
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil.core.process_groups import describe_exit
from anvil.core.tools.base import ToolContext
from anvil.core.tools.errors import ToolError
from anvil.core.tools.shell.processes import shell_session
from anvil.core.workflows.base import SubagentRunner
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.tdd.git import Git
from anvil.core.workflows.tdd.machine import (
    Finding,
    Probe,
    ReviewOutcome,
    RunOutcome,
    Submission,
    branch_name,
)
from anvil.core.workflows.tdd.schema import ACTIVE_PR, ActivePr, Orchestration, dump
from anvil.core.workflows.tdd.store import read_pr
from anvil.core.workflows.tdd.tools import ReportReview

#: the most of the branch's diff the reviewer's prompt carries (it reads the files for the rest)
DIFF_CAP = 60_000


@dataclass(frozen=True)
class Gate:
    """What a TDD job runs besides the model's test commands (plain values from ``[workflows.tdd]``)."""

    plan_path: str
    #: the preflight gate's commands, in order (empty: none)
    preflight: tuple[str, ...] = ()
    review_command: str | None = None
    timeout: float = 600.0


class Observer:
    def __init__(self, files: JobFiles, git: Git, gate: Gate, ctx: ToolContext,
                 subagents: SubagentRunner | None, test_command: str | None) -> None:
        self.files, self.git, self.gate, self.ctx = files, git, gate, ctx
        self.subagents = subagents
        self.test_command = test_command

    async def observe(self, probe: Probe, state: Orchestration, submission: Submission,
                      facts: dict[Probe, Any]) -> Any:
        pr = facts["pr"] if "pr" in facts else read_pr(self.files)
        title = pr.prTitle if isinstance(pr, ActivePr) else (state.current_pr_branch or "the PR")
        match probe:
            case "pr":
                return pr
            case "branch":
                return await asyncio.to_thread(self.git.create_pr_branch, state.main_branch, branch_name(title))
            case "test":
                return await self.run(submission.test_command or self.test_command or "")
            case "preflight":
                return await self.preflight()
            case "review":
                return await self.review(state, pr)
            case "head":
                return await asyncio.to_thread(self.git.state_of_head, state.main_branch)
            case "plan":
                return await asyncio.to_thread(self.git.commit_plan, self.gate.plan_path,
                                               state.last_commit_hash or "", title)
            case "merge":
                return await asyncio.to_thread(self.git.merge_pr_branch, state.main_branch,
                                               state.current_pr_branch or "", title)
        raise AssertionError(f"unknown probe {probe}")

    async def run(self, command: str, env: dict[str, str] | None = None) -> RunOutcome:
        """``command`` from the project root in the session's sandbox; its output as the model reads a command's."""
        exports = "".join(f"export {name}={shlex.quote(value)}; " for name, value in (env or {}).items())
        run = await shell_session(self.ctx).run(exports + command, self.gate.timeout, cwd=self.ctx.root)
        status = f"timed out after {run.timeout:g}s" if run.timed_out else describe_exit(run.exit_code)
        parts = [run.block.text()] if run.block else []
        parts += [f"$ {command}", run.output.rstrip("\n") or "(no output)", f"[{status}]", *run.notes]
        return RunOutcome(command, not run.timed_out and run.exit_code == 0, "\n".join(parts))

    async def preflight(self) -> RunOutcome:
        """The gate's commands in order, stopping at the first that fails."""
        if not self.gate.preflight:
            return RunOutcome("", True, "(no preflight gate: set [workflows.tdd] preflight, verify or test_command)")
        for command in self.gate.preflight:
            outcome = await self.run(command)
            if not outcome.passed:
                return outcome
        return RunOutcome(" && ".join(self.gate.preflight), True, "preflight passed")

    async def review(self, state: Orchestration, pr: Any) -> ReviewOutcome:
        if not isinstance(pr, ActivePr):
            return ReviewOutcome(error=f"{ACTIVE_PR} is not readable")
        branch = state.current_pr_branch or ""
        if self.gate.review_command:
            env = {"ANVIL_ACTIVE_PR": str(self.files.dir / ACTIVE_PR), "ANVIL_MAIN_BRANCH": state.main_branch,
                   "ANVIL_PR_BRANCH": branch}
            outcome = await self.run(self.gate.review_command, env)
            if not outcome.passed:
                return ReviewOutcome(error=f"review_command failed:\n{outcome.output}")
            return parse_review(outcome.output)
        if self.subagents is None:
            return ReviewOutcome(error="this session cannot run the review sub-agent; set [workflows.tdd] "
                                       "review_command")
        diff = await asyncio.to_thread(self.git.run, "diff", "--no-ext-diff", f"{state.main_branch}...HEAD")
        report = ReportReview()
        try:
            result = await self.subagents("review", review_prompt(pr, diff.output, state.main_branch, branch),
                                          self.ctx, (report,))
        except ToolError as exc:
            return ReviewOutcome(error=f"the review sub-agent could not run: {exc}")
        if report.findings is None:
            return ReviewOutcome(error=f"the review sub-agent ended without report_review ({result.summary}): "
                                       f"{result.output[:500]}")
        return ReviewOutcome(report.findings)


def review_prompt(pr: ActivePr, diff: str, main: str, branch: str) -> str:
    if len(diff) > DIFF_CAP:
        diff = diff[:DIFF_CAP] + f"\n[... the diff is longer: see `git diff {main}...HEAD` in the files themselves]"
    return (f"Review the pull request on branch {branch} against {main} before it is merged. Its plan "
            f"({ACTIVE_PR}):\n\n{dump(pr)}\nIts changes (git diff {main}...HEAD):\n\n{diff or '(no changes)'}\n\n"
            "Read the changed files where the diff is not enough. Then call report_review with what must change, "
            "or an empty list to approve.")


def parse_review(output: str) -> ReviewOutcome:
    """A review command's output: ``{"findings": [{"title", "detail", "file"?, "line"?}, ...]}`` (or the bare list),
    as the whole output or its last line that is JSON."""
    body = output.split("\n", 1)[1] if output.startswith("$ ") else output  # the command line anvil put first
    body = body.rsplit("\n[", 1)[0]  # and the exit status after
    candidates = [body, *reversed(body.splitlines())]
    for text in candidates:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        findings = data.get("findings") if isinstance(data, dict) else data
        if isinstance(findings, list):
            return _findings(findings)
    return ReviewOutcome(error="review_command printed no JSON with a findings list "
                               "({\"findings\": [{\"title\": ..., \"detail\": ...}]})")


def _findings(items: Sequence[Any]) -> ReviewOutcome:
    found = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict) or not str(item.get("title", "")).strip():
            return ReviewOutcome(error=f"finding {number} of review_command's output has no title")
        line = item.get("line")
        found.append(Finding(str(item["title"]).strip(), str(item.get("detail", "")).strip() or str(item["title"]),
                             str(item.get("file") or "").strip() or None, line if isinstance(line, int) else None))
    return ReviewOutcome(tuple(found))

"""The TDD job's state machine, as pure code: no files, no git, no commands, no clock.

A decision is taken for one trigger (a call of ``get_task``, ``submit_work``, ``request_scope_reduction`` or
``escalate_for_external_help``) in the current state, by the first row of the transition table
(:data:`~anvil.core.workflows.tdd.rows.TABLE`, the design's table row by row) whose condition holds. Conditions
read *facts*: what the job observed (``ACTIVE_PR.json``, a test run, the preflight gate, a review, the branch, a
merge). A fact not observed yet stops the decision with :class:`Need`; the job observes it (some observations are
the orchestrator's own actions, such as creating the branch or merging it) and asks again. So the table decides
everything, and what has effects happens only when a row needs it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from anvil.core.workflows.tdd.schema import ActivePr, Invalid, Orchestration, PrTask, Status, TddStep

TriggerKind = Literal["get_task", "submit_work", "request_scope_reduction", "escalate_for_external_help"]
#: what a decision may need observed: ACTIVE_PR.json; the PR branch created; the test run; the preflight gate;
#: the code review; HEAD and the tree; the master plan marked and committed; the merge
Probe = Literal["pr", "branch", "test", "preflight", "review", "head", "plan", "merge"]
#: after the answer: nothing more; get_task again in the new state; a fresh conversation; the job stops for the
#: person; the job is complete
Then = Literal["answer", "get_task", "reset", "pause", "finish"]


@dataclass(frozen=True)
class Limits:
    """When the escape hatches unlock: failed attempts on one step (``debug_attempt_counter``)."""

    scope_reduction_after: int = 6
    escalate_after: int = 10


@dataclass(frozen=True)
class Setup:
    """What the words need that is not in the state: where the files are, the limits."""

    plan_path: str = "docs/Plan_Doc/Active_Plan.md"
    job_dir: str = ".anvil/jobs/job"
    limits: Limits = field(default_factory=Limits)
    #: the project's own test command (configured or detected), used when a submission gives none
    test_command: str | None = None


@dataclass(frozen=True)
class Submission:
    summary: str = ""
    test_command: str | None = None
    expectation: Literal["PASS", "FAIL"] | None = None
    analysis_decision: Literal["SUCCESS", "FAILURE"] | None = None
    plan_complete: bool = False


@dataclass(frozen=True)
class Trigger:
    kind: TriggerKind
    submission: Submission = field(default_factory=Submission)
    report: str = ""


# -- facts ---------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RunOutcome:
    """A command run for the job (the test, the preflight gate): whether it passed, and its output as kept."""

    command: str
    passed: bool
    output: str


@dataclass(frozen=True)
class GitOutcome:
    """Something the orchestrator did with git. ``problem``: dirty (the tree has changes), conflict (a merge
    conflict), failed (a git command failed); ``message`` says what happened, in git's words where they help;
    ``commit``: where it left HEAD."""

    ok: bool
    problem: Literal["", "dirty", "conflict", "failed"] = ""
    message: str = ""
    commit: str = ""


@dataclass(frozen=True)
class Finding:
    title: str
    detail: str
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class ReviewOutcome:
    """A code review: its findings (none: approved), or why it could not be done."""

    findings: tuple[Finding, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Head:
    """HEAD, whether the working tree is clean (and what ``git status`` lists when not), commits ahead of main."""

    commit: str
    clean: bool
    ahead: int
    status: str = ""


PrRead = ActivePr | Invalid | None


class Need(Exception):
    def __init__(self, probe: Probe) -> None:
        super().__init__(probe)
        self.probe = probe


# -- a decision ----------------------------------------------------------------------------------------------------

class Keep:
    """ACTIVE_PR.json stays as it is."""


KEEP = Keep()


@dataclass(frozen=True)
class Reply:
    """What the model reads: ``status`` (SUCCESS, FAILURE, NEEDS_ANALYSIS) and ``output``."""

    status: Literal["SUCCESS", "FAILURE", "NEEDS_ANALYSIS"]
    output: str


@dataclass(frozen=True)
class Step:
    """A decision: the row taken, the new state, the answer, ACTIVE_PR.json's new content (``KEEP``; None deletes
    it), what the orchestrator does afterwards (``effects``: ``reset_hard``), and what the run does next."""

    row: str
    state: Orchestration
    reply: Reply
    pr: ActivePr | Keep | None = KEEP
    effects: tuple[Literal["reset_hard"], ...] = ()
    then: Then = "answer"


class View:
    """One decision's inputs, as the rows read them; a fact not observed yet raises :class:`Need`."""

    def __init__(self, state: Orchestration, trigger: Trigger, facts: Mapping[Probe, Any], setup: Setup) -> None:
        self.state = state
        self.trigger = trigger
        self.sub = trigger.submission
        self.facts = facts
        self.setup = setup
        self.limits = setup.limits

    def fact(self, probe: Probe) -> Any:
        if probe not in self.facts:
            raise Need(probe)
        return self.facts[probe]

    @property
    def pr_read(self) -> PrRead:
        return self.fact("pr")  # type: ignore[no-any-return]

    @property
    def pr(self) -> ActivePr:
        """The plan, when the rows before made sure it is valid."""
        read = self.pr_read
        assert isinstance(read, ActivePr), "a row read the plan before checking it"
        return read

    @property
    def step_at(self) -> tuple[int, int] | None:
        read = self.pr_read
        return read.current() if isinstance(read, ActivePr) else None

    @property
    def task(self) -> PrTask:
        at = self.step_at
        assert at is not None
        return self.pr.tasks[at[0]]

    @property
    def step(self) -> TddStep:
        at = self.step_at
        assert at is not None
        return self.pr.tasks[at[0]].tdd_steps[at[1]]

    def to(self, status: Status, **changes: Any) -> Orchestration:
        return self.state.model_copy(update={"status": status, **changes})


@dataclass(frozen=True)
class Row:
    """One row of the transition table: in ``state`` (None: any state), on ``trigger``, when ``when`` holds,
    ``act`` decides. ``condition`` and ``goes_to`` are the design's words for it."""

    id: str
    state: Status | None
    trigger: TriggerKind
    condition: str
    goes_to: str
    when: Callable[[View], bool]
    act: Callable[[View], Step]


def decide(table: tuple[Row, ...], state: Orchestration, trigger: Trigger, facts: Mapping[Probe, Any],
           setup: Setup) -> Step | Need:
    """The first row of ``table`` for this state and trigger whose condition holds, acted on; or the fact it needs
    observed first."""
    view = View(state, trigger, facts, setup)
    try:
        for row in table:
            if row.trigger == trigger.kind and row.state in (None, state.status) and row.when(view):
                return dataclasses.replace(row.act(view), row=row.id)
    except Need as need:
        return need
    raise AssertionError(f"no row of the table for {trigger.kind} in {state.status}")  # the table has fallbacks


# -- pure helpers the rows use ---------------------------------------------------------------------------------------

def branch_name(title: str) -> str:
    """A git branch name from a PR title: ``feat: Implement New Feature`` → ``feat/implement-new-feature``."""
    kind, colon, rest = title.partition(":")
    prefix = _slug(kind) if colon and re.fullmatch(r"\s*[A-Za-z][\w-]{0,20}(\([^)]*\))?!?\s*", kind) else ""
    words = _slug(rest if prefix else title)[:60].strip("-") or "pr"
    return f"{prefix}/{words}" if prefix else f"pr/{words}"


def _slug(text: str) -> str:
    text = re.sub(r"\([^)]*\)|!", "", text)  # a conventional commit's scope and breaking-change mark
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def mark_done(pr: ActivePr, at: tuple[int, int]) -> ActivePr:
    """The plan with step ``at`` DONE, and its task DONE when it was the last, else IN_PROGRESS."""
    t, s = at
    task = pr.tasks[t]
    steps = tuple(step.model_copy(update={"status": "DONE"}) if i == s else step
                  for i, step in enumerate(task.tdd_steps))
    status = "DONE" if all(step.status == "DONE" for step in steps) else "IN_PROGRESS"
    return _with_task(pr, t, task.model_copy(update={"tdd_steps": steps, "status": status}))


def mark_task(pr: ActivePr, t: int, status: str) -> ActivePr:
    task = pr.tasks[t]
    return pr if task.status == status else _with_task(pr, t, task.model_copy(update={"status": status}))


def _with_task(pr: ActivePr, t: int, task: PrTask) -> ActivePr:
    return pr.model_copy(update={"tasks": (*pr.tasks[:t], task, *pr.tasks[t + 1:])})


def escalation_unlocked(state: Orchestration, limits: Limits, task_name: str | None) -> bool:
    """Escalation unlocks after ``escalate_after`` failed attempts, or after ``scope_reduction_after`` on a task a
    re-plan wrote (the smaller steps failed too)."""
    counter = state.debug_attempt_counter
    if counter >= limits.escalate_after:
        return True
    return task_name in state.replanned_tasks and counter >= limits.scope_reduction_after

"""The TDD job's two state files, as pydantic schemas checked on every read.

- ``ACTIVE_PR.json``: the engineering plan of the PR being implemented. The model writes it (from the master plan,
  and again when it re-plans); anvil marks its steps and tasks as they are done and adds review findings as tasks.
- ``ORCHESTRATION_STATE.json``: where the job stands (the design's ``status``, ``debug_attempt_counter``,
  ``last_commit_hash``, ``current_pr_branch``, ``last_error``) and what the later states need (the failed task
  a re-plan starts from, the output a RED step's analysis is about, a halt's message). Only anvil writes it.

A file that does not match is an error naming each bad field by its path (``tasks[0].tdd_steps[1].status``), so
the model (or the person) can fix exactly that.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, model_validator

Status = Literal["INITIALIZING", "CREATING_BRANCH", "EXECUTING_TDD", "DEBUGGING", "REPLANNING", "CODE_REVIEW",
                 "AWAITING_FINALIZATION", "FINALIZE_COMPLETE", "PLAN_UPDATED", "MERGING_BRANCH", "HALTED"]
STATUSES: tuple[Status, ...] = Status.__args__  # type: ignore[attr-defined]
StepType = Literal["RED", "GREEN", "REFACTOR"]
ACTIVE_PR = "ACTIVE_PR.json"
ORCHESTRATION_STATE = "ORCHESTRATION_STATE.json"
#: how many schema errors one message lists (the rest are counted)
MAX_ERRORS = 5


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TddStep(_Strict):
    type: StepType
    description: str = Field(min_length=1)
    status: Literal["TODO", "DONE"] = "TODO"


class BreakdownHistory(_Strict):
    originalTaskName: str = Field(min_length=1)
    justification: str = Field(min_length=1)


class PrTask(_Strict):
    taskName: str = Field(min_length=1)
    status: Literal["TODO", "IN_PROGRESS", "DONE", "ERROR"] = "TODO"
    breakdownHistory: BreakdownHistory | None = None
    tdd_steps: tuple[TddStep, ...] = Field(min_length=1)

    @property
    def done(self) -> bool:
        return all(step.status == "DONE" for step in self.tdd_steps)


class ActivePr(_Strict):
    """ACTIVE_PR.json: the design's field names (camelCase, and tdd_steps)."""

    masterPlanPath: str = Field(min_length=1)
    prTitle: str = Field(min_length=1)
    summary: str
    verificationPlan: str
    tasks: tuple[PrTask, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_names(self) -> ActivePr:
        names = [task.taskName for task in self.tasks]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"task names must be unique; {', '.join(map(repr, repeated))} appears more than once")
        return self

    @property
    def finished(self) -> bool:
        return all(task.done for task in self.tasks)

    def current(self) -> tuple[int, int] | None:
        """(task index, step index) of the first step still TODO, or None when every step is DONE."""
        for t, task in enumerate(self.tasks):
            for s, step in enumerate(task.tdd_steps):
                if step.status == "TODO":
                    return t, s
        return None


class ReplanContext(_Strict):
    """What a re-plan starts from: the task that failed, its goal (its steps), the final error, and the tasks that
    were done before it (which the new plan must keep)."""

    original_task: str
    goal: str
    error: str
    done_tasks: tuple[str, ...] = ()
    task_names: tuple[str, ...] = ()


class Halt(_Strict):
    """Why the job is HALTED: a merge conflict (the person merges by hand; the job goes on with the next PR), or a
    git command that failed (the job goes back to ``resume_at`` and tries again once the halt is cleared)."""

    kind: Literal["merge_conflict", "git"]
    message: str
    branch: str = ""
    resume_at: Status = "INITIALIZING"


class Orchestration(_Strict):
    status: Status = "INITIALIZING"
    debug_attempt_counter: StrictInt = Field(0, ge=0)
    last_commit_hash: str | None = None
    current_pr_branch: str | None = None
    last_error: str | None = None
    #: the branch PRs start from and merge into (configured, or detected when the job started)
    main_branch: str = Field(min_length=1)
    #: a RED run answered NEEDS_ANALYSIS: its output, until the model decides SUCCESS or FAILURE
    analysis_output: str | None = None
    #: a GREEN or REFACTOR step passed: the next task is a checkpoint commit
    checkpoint_due: bool = False
    replan: ReplanContext | None = None
    #: the tasks the last re-plan wrote: one failing again may escalate sooner
    replanned_tasks: tuple[str, ...] = ()
    review_rounds: StrictInt = Field(0, ge=0)
    halt: Halt | None = None
    #: the model's report while the person has not answered it
    escalation: str | None = None
    #: what the person answered to an escalation, shown with the debugging task
    guidance: str | None = None
    #: the PR this job works on, counting from 1, and the titles of those it merged
    pr_number: StrictInt = Field(1, ge=1)
    merged: tuple[str, ...] = ()
    #: the job as the session sees it: running (a turn works on it), paused, complete, stopped
    job_status: Literal["running", "paused", "complete", "stopped"] = "running"
    session_id: str = ""


class Invalid(BaseModel):
    """A state file that could not be read or does not match its schema: what is wrong, for the model or person."""

    model_config = ConfigDict(frozen=True)

    message: str


def parse_active_pr(text: str | None, shown: str) -> ActivePr | Invalid | None:
    """``ACTIVE_PR.json``'s text (None: the file does not exist) as a plan, or what is wrong with it."""
    if text is None:
        return None
    return _parse(ActivePr, text, shown)


def parse_orchestration(text: str, shown: str) -> Orchestration | Invalid:
    return _parse(Orchestration, text, shown)


def _parse(model: type[ActivePr] | type[Orchestration], text: str, shown: str) -> ActivePr | Orchestration | Invalid:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Invalid(message=f"{shown} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return Invalid(message=f"{shown} does not match its schema: {schema_errors(exc)}.")


def schema_errors(exc: ValidationError) -> str:
    """Each error as ``path: problem``, the path written as the JSON is (``tasks[0].tdd_steps[1].status``)."""
    errors = exc.errors()
    shown = [f"{field_path(error['loc'])}: {_problem(error)}" for error in errors[:MAX_ERRORS]]
    more = len(errors) - MAX_ERRORS
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(the whole file)"


def _problem(error: dict[str, object]) -> str:
    kind = error.get("type")
    if kind == "missing":
        return "missing (required)"
    if kind == "extra_forbidden":
        return "not a field of this schema"
    text = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    given = error.get("input")
    if kind in {"literal_error", "string_type", "int_type", "bool_type", "list_type", "tuple_type"}:
        text += f" (got {json.dumps(given, default=str)[:60]})"
    return text[:1].lower() + text[1:]


def dump(model: BaseModel) -> str:
    return model.model_dump_json(indent=2, exclude_none=True) + "\n"


#: the schema the model is given when it writes ACTIVE_PR.json (the design's, with its enums spelled out)
ACTIVE_PR_SCHEMA = """{
  "masterPlanPath": "string (the master plan's path)",
  "prTitle": "string (e.g. \\"feat: Add the config loader\\"; the branch is named after it)",
  "summary": "string",
  "verificationPlan": "string (how the PR as a whole is shown to work)",
  "tasks": [
    {
      "taskName": "string (unique in the file)",
      "status": "TODO | IN_PROGRESS | DONE | ERROR",
      "breakdownHistory": {"originalTaskName": "string", "justification": "string"},  // only after a re-plan
      "tdd_steps": [
        {"type": "RED | GREEN | REFACTOR", "description": "string", "status": "TODO | DONE"}
      ]
    }
  ]
}"""

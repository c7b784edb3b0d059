"""A phased job on disk: its state file, its archive, and a new job's directory.

``.anvil/jobs/<job-id>/`` holds (all plain text, for the person to read):

- ``instructions.md``: the person's instructions, as given;
- ``workspace.md``: the job's long-term memory, written by the model, shown in every phase's system prompt;
- ``main_plan.md``: the execution plan, written by the model;
- ``todos.yaml``: the next tactical phase's todos, written by ``todo_write`` (consumed when the phase starts);
- ``archive/phase_<n>.yaml``: each finished tactical phase's todos with their final statuses;
- ``state.yaml``: where the job stands (phase number and kind, status, the phase's todos, iterations, cost), read
  and validated whenever a job is resumed.
"""

from __future__ import annotations

import time
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from anvil.core.workflows.base import JobError
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.phased.logic import Archive, JobState, Todo

STATE = "state.yaml"
INSTRUCTIONS = "instructions.md"
WORKSPACE = "workspace.md"
MAIN_PLAN = "main_plan.md"
_HEADER = ("# A phased anvil job: where it stands. anvil reads this file when the job is resumed\n"
           "# (anvil -c, anvil --workflow phased --resume JOB) and checks it; edit it with care.\n")


class _TodoRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: StrictInt
    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed"] = "pending"
    description: str = ""


class _StateRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workflow: Literal["phased"] = "phased"
    job_id: str = Field(min_length=1)
    phase: StrictInt = Field(ge=1)
    kind: Literal["strategic", "tactical"]
    status: Literal["running", "paused", "complete", "budget", "stopped"]
    title: str = ""
    description: str = ""
    todos: list[_TodoRecord] = Field(min_length=1)
    iterations: StrictInt = Field(0, ge=0)
    cost: float = Field(0.0, ge=0)
    summary: str = ""
    session_id: str = ""
    updated: str = ""


def save_state(files: JobFiles, state: JobState) -> None:
    record: dict[str, Any] = {
        "workflow": "phased", "job_id": state.job_id, "phase": state.phase, "kind": state.kind,
        "status": state.status, "title": state.title, "description": state.description,
        "todos": [_todo_record(todo) for todo in state.todos],
        "iterations": state.iterations, "cost": round(state.cost, 6), "summary": state.summary,
        "session_id": state.session_id, "updated": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    files.write(STATE, _HEADER + yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100))


def load_state(files: JobFiles) -> JobState:
    """The job's state from ``state.yaml``, checked; JobError saying what is wrong and where."""
    shown = files.display(STATE)
    text = files.read(STATE)
    if text is None:
        raise JobError(f"{files.shown} is not a phased job: it has no {STATE}. `ls {files.display('..')}` lists "
                       "the jobs.")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise JobError(f"{shown} is not valid YAML ({_first_line(exc)}). Fix it, or start a new job.") from None
    try:
        record = _StateRecord.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise JobError(f"{shown}: {where}: {error['msg'].lower()}. Fix it (the README's Workflows section shows the "
                       "file), or start a new job.") from None
    if sum(todo.status == "in_progress" for todo in record.todos) > 1:
        raise JobError(f"{shown}: more than one todo is in_progress; leave one (the one being worked on).")
    todos = tuple(Todo(t.id, t.content, t.status, t.description) for t in record.todos)
    return JobState(record.job_id, record.phase, record.kind, todos, record.status, record.title,
                    record.description, record.iterations, record.cost, record.summary, record.session_id)


def save_archive(files: JobFiles, archive: Archive) -> None:
    record: dict[str, Any] = {"phase": archive.phase, "kind": "tactical"}
    if archive.title:
        record["title"] = archive.title
    if archive.description:
        record["description"] = archive.description
    record["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    record["todos"] = [_todo_record(todo) for todo in archive.todos]
    files.write(archive.file, yaml.safe_dump(record, sort_keys=False, allow_unicode=True, width=100))


def create_job(files: JobFiles, state: JobState, instructions: str) -> None:
    """A new job's directory: its instructions and its state; JobError when it exists already."""
    if files.dir.exists() or files.dir.is_symlink():
        raise JobError(f"{files.shown} exists already; a new job needs a directory of its own.")
    files.write(INSTRUCTIONS, instructions.rstrip("\n") + "\n")
    save_state(files, state)


def _todo_record(todo: Todo) -> dict[str, Any]:
    record: dict[str, Any] = {"id": todo.id, "content": todo.content, "status": todo.status}
    if todo.description:
        record["description"] = todo.description
    return record


def _first_line(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "it cannot be parsed"
    return f"line {mark.line + 1}: {problem}" if mark is not None else str(problem)

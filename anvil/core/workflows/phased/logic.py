"""A phased job's rules as pure functions over immutable values: no files, no loop, no clock.

A job alternates strategic phases (plan: four fixed todos) and tactical phases (do: the todos the strategic phase
wrote to ``todos.yaml``). Phase 1 is strategic. When the last todo of a phase is marked done:

- strategic → tactical, if ``todos.yaml`` is valid (:func:`read_plan`): its todos become the phase's; else the
  transition is rejected with the reason and the last todo stays in progress;
- tactical → strategic: the phase's todos are archived (:class:`Archive`) and the fixed strategic todos load.

The job ends only with ``job_complete`` in a strategic phase, by the person, or at a budget (:class:`Limits`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import yaml

TodoStatus = Literal["pending", "in_progress", "completed"]
PhaseKind = Literal["strategic", "tactical"]
#: running: being worked on (or was, when the process died); paused: a turn ended with work left
JobStatusWord = Literal["running", "paused", "complete", "budget", "stopped"]
FINISHED = ("complete", "budget", "stopped")
TODOS_FILE = "todos.yaml"


@dataclass(frozen=True)
class Todo:
    id: int
    content: str
    status: TodoStatus = "pending"
    description: str = ""


@dataclass(frozen=True)
class Limits:
    """The job's bounds: todos per tactical phase, and its budget (None: no limit)."""

    min_todos: int = 5
    max_todos: int = 20
    max_phases: int | None = 30
    max_iterations: int | None = 1500
    max_cost: float | None = None


@dataclass(frozen=True)
class PhasePlan:
    """A valid ``todos.yaml``: the next tactical phase's todos, and its optional title and description."""

    todos: tuple[Todo, ...]
    title: str = ""
    description: str = ""


@dataclass(frozen=True)
class JobState:
    """Where a job stands: what ``state.yaml`` holds."""

    job_id: str
    phase: int = 1
    kind: PhaseKind = "strategic"
    todos: tuple[Todo, ...] = ()
    status: JobStatusWord = "running"
    title: str = ""
    description: str = ""
    #: model calls and cost (USD, of the calls whose price is known) over the whole job
    iterations: int = 0
    cost: float = 0.0
    #: job_complete's summary, or why the job stopped
    summary: str = ""
    #: the session that worked on it last (resuming the job resumes that conversation)
    session_id: str = ""

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def open_todos(self) -> list[Todo]:
        return [todo for todo in self.todos if todo.status != "completed"]

    def current(self) -> Todo | None:
        return next((todo for todo in self.todos if todo.status == "in_progress"), None)


@dataclass(frozen=True)
class Archive:
    """A finished tactical phase's todos with their final statuses, as ``archive/phase_<n>.yaml`` keeps them."""

    phase: int
    title: str
    description: str
    todos: tuple[Todo, ...]

    @property
    def file(self) -> str:
        return f"archive/phase_{self.phase}.yaml"


@dataclass(frozen=True)
class Step:
    """What marking a todo done did. ``outcome``: stay (the phase goes on), rejected (the phase was over but its
    ``todos.yaml`` is not valid: ``reason``), advanced (the next phase began), budget (the phase budget ends the
    job: ``reason``). ``archive``: the tactical phase that just ended, to keep."""

    state: JobState
    outcome: Literal["stay", "rejected", "advanced", "budget"]
    reason: str = ""
    archive: Archive | None = None
    plan: PhasePlan | None = None


def with_current(todos: tuple[Todo, ...] | list[Todo]) -> tuple[Todo, ...]:
    """The todos with the first one not done in progress and the other open ones pending."""
    result: list[Todo] = []
    current_set = False
    for todo in todos:
        if todo.status == "completed":
            result.append(todo)
        elif not current_set:
            result.append(dataclasses.replace(todo, status="in_progress"))
            current_set = True
        else:
            result.append(dataclasses.replace(todo, status="pending"))
    return tuple(result)


def numbered(texts: list[str]) -> tuple[Todo, ...]:
    return with_current([Todo(number, text) for number, text in enumerate(texts, start=1)])


def first_state(job_id: str, initial_todos: list[str]) -> JobState:
    """A new job: phase 1, strategic, with the initial strategic todos."""
    return JobState(job_id, todos=numbered(initial_todos))


def mark_done(state: JobState, todo_id: int) -> JobState | str:
    """The state with todo ``todo_id`` completed, or why that cannot be."""
    if state.finished:
        return f"The job is over ({state.status}); there is nothing left to mark done."
    known = {todo.id: todo for todo in state.todos}
    if todo_id not in known:
        ids = ", ".join(str(todo.id) for todo in state.todos)
        return f"This phase has no todo {todo_id}; its todos are {ids}."
    if known[todo_id].status == "completed":
        left = ", ".join(str(todo.id) for todo in state.open_todos()) or "none"
        return f"Todo {todo_id} is already done. Todos still open: {left}."
    todos = [dataclasses.replace(t, status="completed") if t.id == todo_id else t for t in state.todos]
    return dataclasses.replace(state, todos=with_current(todos))


def finish_phase(state: JobState, limits: Limits, plan: Callable[[], PhasePlan | str],
                 strategic_todos: Callable[[int], list[str]]) -> Step:
    """After a todo was marked done: the same phase while todos are open, else the next phase (or why not).

    ``plan`` reads and checks ``todos.yaml`` (a :class:`PhasePlan`, or the reason it is not valid); it is called
    only when a strategic phase ends. ``strategic_todos(n)`` are the fixed todos after tactical phase ``n``."""
    if state.open_todos():
        return Step(state, "stay")
    if limits.max_phases is not None and state.phase >= limits.max_phases:
        reason = (f"the job reached its budget of {limits.max_phases} phases ([workflows.phased] max_phases); "
                  f"it stopped after phase {state.phase} ({state.kind})")
        return Step(dataclasses.replace(state, status="budget", summary=reason), "budget", reason)
    if state.kind == "tactical":
        archive = Archive(state.phase, state.title, state.description, state.todos)
        following = dataclasses.replace(state, phase=state.phase + 1, kind="strategic", title="", description="",
                                        todos=numbered(strategic_todos(state.phase)))
        return Step(following, "advanced", archive=archive)
    checked = plan()
    if isinstance(checked, str):
        *done, last = state.todos
        reopened = (*done, dataclasses.replace(last, status="in_progress"))
        return Step(dataclasses.replace(state, todos=reopened), "rejected", checked)
    following = dataclasses.replace(state, phase=state.phase + 1, kind="tactical", title=checked.title,
                                    description=checked.description, todos=with_current(checked.todos))
    return Step(following, "advanced", plan=checked)


def budget_reached(state: JobState, limits: Limits) -> str | None:
    """Before a model call: why the job must stop now (its iterations or cost are used up), or None."""
    if limits.max_iterations is not None and state.iterations >= limits.max_iterations:
        return (f"the job reached its budget of {limits.max_iterations} model calls ([workflows.phased] "
                f"max_iterations) in phase {state.phase} ({state.kind})")
    if limits.max_cost is not None and state.cost >= limits.max_cost:
        return (f"the job reached its cost budget of ${limits.max_cost:.2f} ([workflows.phased] max_cost; "
                f"${state.cost:.2f} spent) in phase {state.phase} ({state.kind})")
    return None


# -- todos.yaml --------------------------------------------------------------------------------------------------

def read_plan(text: str | None, limits: Limits) -> PhasePlan | str:
    """``todos.yaml``'s text (None: the file does not exist) as a :class:`PhasePlan`, or the first reason it is
    not one. The reasons are written for the model, which then fixes the file."""
    if text is None:
        return f"{TODOS_FILE} does not exist. Write the next phase's todos with todo_write."
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "it cannot be parsed"
        return f"{TODOS_FILE} is not valid YAML{where}: {problem}. Write it again with todo_write."
    if data is None:
        return f"{TODOS_FILE} is empty. Write the next phase's todos with todo_write."
    if not isinstance(data, dict) or not isinstance(data.get("todos"), list):
        return (f"{TODOS_FILE} must be a mapping with a `todos` list (and an optional `phase` title and "
                f"`description`); it has no `todos` list.")
    for key in ("phase", "description"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"`{key}` in {TODOS_FILE} must be text, not {_kind(data[key])}."
    items = data["todos"]
    if not limits.min_todos <= len(items) <= limits.max_todos:
        return (f"{TODOS_FILE} has {len(items)} todo{'s' if len(items) != 1 else ''}; a phase needs "
                f"{limits.min_todos} to {limits.max_todos}. Make them concrete steps of about the same size, and "
                "write them again with todo_write.")
    todos: list[Todo] = []
    for number, item in enumerate(items, start=1):
        todo = _todo(number, item)
        if isinstance(todo, str):
            return todo
        todos.append(todo)
    ids = [todo.id for todo in todos]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        return f"Todo ids in {TODOS_FILE} must be unique: {', '.join(map(str, repeated))} appears more than once."
    return PhasePlan(tuple(todos), str(data.get("phase") or "").strip(), str(data.get("description") or "").strip())


def _todo(number: int, item: Any) -> Todo | str:
    where = f"Todo number {number} in {TODOS_FILE}"
    if not isinstance(item, dict):
        return f"{where} is not a mapping with `id` and `content` (it is {_kind(item)})."
    todo_id = item.get("id")
    if not isinstance(todo_id, int) or isinstance(todo_id, bool):
        return f"{where} needs an integer `id` (it has {todo_id!r})."
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        return f"{where} (id {todo_id}) needs a `content` text saying what to do."
    description = item.get("description")
    if description is not None and not isinstance(description, str):
        return f"{where} (id {todo_id}): `description` must be text, not {_kind(description)}."
    return Todo(todo_id, content.strip(), description=(description or "").strip())


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text", int: "a number", float: "a number",
            bool: "true/false"}.get(type(value), type(value).__name__)


def plan_yaml(plan: PhasePlan) -> str:
    """A plan as ``todos.yaml`` text (what todo_write writes)."""
    data: dict[str, Any] = {}
    if plan.title:
        data["phase"] = plan.title
    if plan.description:
        data["description"] = plan.description
    data["todos"] = [{"id": t.id, "content": t.content, **({"description": t.description} if t.description else {})}
                     for t in plan.todos]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)

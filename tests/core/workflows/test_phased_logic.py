"""The phased job's rules as pure code (anvil/core/workflows/phased/logic.py), table by table: todos.yaml checks
with their messages, marking todos done, every transition (accepted, rejected, archived), phase numbering and the
budgets."""

from __future__ import annotations

import dataclasses

import pytest

from anvil.core.workflows.phased import logic
from anvil.core.workflows.phased.logic import JobState, Limits, PhasePlan, Todo
from anvil.core.workflows.phased.texts import initial_todos, strategic_todos

LIMITS = Limits()


def todos_yaml(count: int, **extra: str) -> str:
    head = "".join(f"{key}: {value}\n" for key, value in extra.items())
    return head + "todos:\n" + "".join(f"  - id: {n}\n    content: step {n}\n" for n in range(1, count + 1))


REJECTED = [
    (None, "todos.yaml does not exist. Write the next phase's todos with todo_write."),
    ("todos: [\n  - id: 1", "todos.yaml is not valid YAML (line 2): expected the node content"),
    ("", "todos.yaml is empty. Write the next phase's todos with todo_write."),
    ("- a\n- b\n", "todos.yaml must be a mapping with a `todos` list"),
    ("phase: one\n", "it has no `todos` list"),
    ("todos: five\n", "it has no `todos` list"),
    ("phase: [a, b]\n" + todos_yaml(5), "`phase` in todos.yaml must be text, not a list."),
    ("description: {a: 1}\n" + todos_yaml(5), "`description` in todos.yaml must be text, not a mapping."),
    (todos_yaml(3), "todos.yaml has 3 todos; a phase needs 5 to 20."),
    (todos_yaml(21), "todos.yaml has 21 todos; a phase needs 5 to 20."),
    ("todos: []\n", "todos.yaml has 0 todos; a phase needs 5 to 20."),
    (todos_yaml(4) + "  - just text\n", "Todo number 5 in todos.yaml is not a mapping with `id` and `content` "
                                        "(it is text)."),
    (todos_yaml(4) + "  - content: no id\n", "Todo number 5 in todos.yaml needs an integer `id` (it has None)."),
    (todos_yaml(4) + "  - id: '5'\n    content: x\n", "Todo number 5 in todos.yaml needs an integer `id` (it has "
                                                     "'5')."),
    (todos_yaml(4) + "  - id: true\n    content: x\n", "Todo number 5 in todos.yaml needs an integer `id` (it has "
                                                     "True)."),
    (todos_yaml(4) + "  - id: 5\n", "Todo number 5 in todos.yaml (id 5) needs a `content` text"),
    (todos_yaml(4) + "  - id: 5\n    content: '  '\n", "Todo number 5 in todos.yaml (id 5) needs a `content` text"),
    (todos_yaml(4) + "  - id: 5\n    content: x\n    description: [1]\n",
     "Todo number 5 in todos.yaml (id 5): `description` must be text, not a list."),
    (todos_yaml(4) + "  - id: 2\n    content: again\n",
     "Todo ids in todos.yaml must be unique: 2 appears more than once."),
]


@pytest.mark.parametrize(("text", "message"), REJECTED)
def test_every_invalid_todos_yaml_is_rejected_with_its_reason(text: str | None, message: str) -> None:
    result = logic.read_plan(text, LIMITS)
    assert isinstance(result, str)
    assert message in result


def test_a_valid_todos_yaml_keeps_the_title_descriptions_and_ids() -> None:
    text = ("phase: 'Phase 2: parser'\ndescription: Make the parser strict.\ntodos:\n"
            "  - id: 10\n    content: ' Add a test '\n    description: tests/test_parser.py\n"
            + "".join(f"  - id: {n}\n    content: step {n}\n" for n in range(11, 15)))
    plan = logic.read_plan(text, LIMITS)
    assert plan == PhasePlan((Todo(10, "Add a test", description="tests/test_parser.py"),
                              *(Todo(n, f"step {n}") for n in range(11, 15))),
                             "Phase 2: parser", "Make the parser strict.")


@pytest.mark.parametrize(("count", "limits", "ok"), [
    (5, LIMITS, True), (20, LIMITS, True), (4, LIMITS, False), (2, Limits(min_todos=2, max_todos=3), True),
    (4, Limits(min_todos=2, max_todos=3), False)])
def test_the_todo_count_follows_the_configured_range(count: int, limits: Limits, ok: bool) -> None:
    assert isinstance(logic.read_plan(todos_yaml(count), limits), PhasePlan) is ok


def test_what_todo_write_writes_reads_back_as_the_same_plan() -> None:
    plan = PhasePlan((Todo(1, "Add: a colon", description="with 'quotes'"), *(Todo(n, f"s{n}") for n in range(2, 6))),
                     "Phase: two", "")
    assert logic.read_plan(logic.plan_yaml(plan), LIMITS) == plan


# -- todos in a phase --------------------------------------------------------------------------------------------

def strategic(job_id: str = "job") -> JobState:
    return logic.first_state(job_id, initial_todos(LIMITS))


def test_a_new_job_is_phase_1_strategic_with_four_fixed_todos_the_first_in_progress() -> None:
    state = strategic()
    assert (state.phase, state.kind, state.status) == (1, "strategic", "running")
    assert [t.id for t in state.todos] == [1, 2, 3, 4]
    assert [t.status for t in state.todos] == ["in_progress", "pending", "pending", "pending"]
    assert "workspace.md" in state.todos[0].content and "todo_write" in state.todos[3].content


@pytest.mark.parametrize(("state", "todo_id", "message"), [
    (strategic(), 7, "This phase has no todo 7; its todos are 1, 2, 3, 4."),
    (logic.mark_done(strategic(), 2), 2, "Todo 2 is already done. Todos still open: 1, 3, 4."),
    (dataclasses.replace(strategic(), status="complete"), 1, "The job is over (complete)"),
])
def test_marking_a_todo_done_that_cannot_be_says_why(state: JobState, todo_id: int, message: str) -> None:
    result = logic.mark_done(state, todo_id)
    assert isinstance(result, str) and message in result


def test_marking_done_moves_in_progress_to_the_first_open_todo() -> None:
    state = logic.mark_done(strategic(), 1)
    assert isinstance(state, JobState)
    assert [t.status for t in state.todos] == ["completed", "in_progress", "pending", "pending"]
    out_of_order = logic.mark_done(state, 3)
    assert isinstance(out_of_order, JobState)
    assert [t.status for t in out_of_order.todos] == ["completed", "in_progress", "completed", "pending"]


# -- transitions -------------------------------------------------------------------------------------------------

def all_done(state: JobState) -> JobState:
    return dataclasses.replace(state, todos=tuple(dataclasses.replace(t, status="completed") for t in state.todos))


def finish(state: JobState, plan: PhasePlan | str = "unused", limits: Limits = LIMITS) -> logic.Step:
    return logic.finish_phase(state, limits, lambda: plan, lambda last: strategic_todos(limits, last))


def test_a_phase_with_open_todos_stays() -> None:
    state = logic.mark_done(strategic(), 1)
    assert isinstance(state, JobState)
    step = finish(state, plan="must not be read")
    assert step.outcome == "stay" and step.state == state


def test_the_end_of_a_strategic_phase_loads_todos_yaml_into_a_tactical_phase() -> None:
    plan = logic.read_plan(todos_yaml(6, phase="Parser", description="Strict parsing"), LIMITS)
    assert isinstance(plan, PhasePlan)
    step = finish(all_done(strategic()), plan)
    assert step.outcome == "advanced" and step.archive is None and step.plan == plan
    state = step.state
    assert (state.phase, state.kind, state.title, state.description) == (2, "tactical", "Parser", "Strict parsing")
    assert [t.content for t in state.todos] == [f"step {n}" for n in range(1, 7)]
    assert [t.status for t in state.todos] == ["in_progress"] + ["pending"] * 5


def test_a_rejected_transition_puts_the_last_todo_back_in_progress_and_stays_in_the_phase() -> None:
    done = all_done(strategic())
    step = finish(done, "todos.yaml has 3 todos; a phase needs 5 to 20.")
    assert step.outcome == "rejected" and step.reason == "todos.yaml has 3 todos; a phase needs 5 to 20."
    assert (step.state.phase, step.state.kind) == (1, "strategic")
    assert [t.status for t in step.state.todos] == ["completed", "completed", "completed", "in_progress"]


def test_the_end_of_a_tactical_phase_archives_its_todos_and_loads_the_strategic_ones() -> None:
    tactical = JobState("job", phase=4, kind="tactical", title="Parser", description="Strict",
                        todos=tuple(Todo(n, f"step {n}", "completed", "d" if n == 1 else "") for n in range(1, 6)))
    step = finish(tactical, plan="must not be read")
    assert step.outcome == "advanced" and step.plan is None
    assert step.archive == logic.Archive(4, "Parser", "Strict", tactical.todos)
    assert step.archive.file == "archive/phase_4.yaml"
    state = step.state
    assert (state.phase, state.kind, state.title) == (5, "strategic", "")
    assert [t.id for t in state.todos] == [1, 2, 3, 4] and state.todos[0].status == "in_progress"
    assert "archive/phase_4.yaml" in state.todos[0].content and "job_complete" in state.todos[3].content


def test_phases_are_numbered_on_through_several_cycles() -> None:
    plan = logic.read_plan(todos_yaml(5), LIMITS)
    assert isinstance(plan, PhasePlan)
    state, seen = strategic(), []
    for _ in range(5):
        seen.append((state.phase, state.kind))
        state = finish(all_done(state), plan).state
    assert seen == [(1, "strategic"), (2, "tactical"), (3, "strategic"), (4, "tactical"), (5, "strategic")]


def test_the_phase_budget_ends_the_job_when_its_last_phase_ends() -> None:
    limits = Limits(max_phases=2)
    tactical = all_done(JobState("job", phase=2, kind="tactical", todos=(Todo(1, "x"),)))
    step = finish(tactical, limits=limits)
    assert step.outcome == "budget" and step.state.status == "budget"
    assert "budget of 2 phases" in step.reason and step.state.summary == step.reason
    assert finish(all_done(strategic()), logic.read_plan(todos_yaml(5), limits), limits).outcome == "advanced"


@pytest.mark.parametrize(("state", "limits", "reason"), [
    (JobState("j", iterations=10), Limits(max_iterations=10), "budget of 10 model calls"),
    (JobState("j", iterations=9), Limits(max_iterations=10), None),
    (JobState("j", cost=2.5), Limits(max_cost=2.0), "cost budget of $2.00"),
    (JobState("j", cost=1.5), Limits(max_cost=2.0), None),
    (JobState("j", iterations=10**6, cost=10.0), Limits(max_iterations=None, max_cost=None), None),
])
def test_the_iteration_and_cost_budgets(state: JobState, limits: Limits, reason: str | None) -> None:
    found = logic.budget_reached(state, limits)
    assert (found is None) if reason is None else (found is not None and reason in found)

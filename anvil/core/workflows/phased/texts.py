"""What a phased job says to the model: the fixed strategic todos, the system-prompt layer, each phase's first
message, and the reminders. Words only; the rules are in :mod:`logic`."""

from __future__ import annotations

from anvil.core.workflows.phased.logic import JobState, Limits, Todo

#: the most of instructions.md and of workspace.md the system prompt carries (the files keep everything)
MEMORY_CAP = 16 * 1024
_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}


def initial_todos(limits: Limits) -> list[str]:
    """Phase 1's todos (strategic, at the start of the job)."""
    return [
        "Explore the project (its layout, how to build and test it, its conventions) and write what someone "
        "starting on this job must know into workspace.md.",
        "Read the instructions (instructions.md) and write an execution plan for the whole job into main_plan.md.",
        f"Divide the plan in main_plan.md into phases of {limits.min_todos} to {limits.max_todos} concrete todos "
        "each, and write that division into main_plan.md.",
        "Write the first phase's todos with todo_write (they go to todos.yaml).",
    ]


def strategic_todos(limits: Limits, last_tactical: int) -> list[str]:
    """The todos of a strategic phase that follows tactical phase ``last_tactical``."""
    return [
        f"Summarise what tactical phase {last_tactical} did: its todos are in archive/phase_{last_tactical}.yaml; look "
        "at what it changed. Note what was done, what failed and what was decided.",
        "Update workspace.md with what was learned: facts about the project, decisions, pitfalls to avoid.",
        "Update main_plan.md: mark what is done, and adjust the phases still to come to what was learned.",
        f"Write the next phase's {limits.min_todos} to {limits.max_todos} todos with todo_write, or call "
        "job_complete(summary) if the plan is fully carried out.",
    ]


def todo_lines(todos: tuple[Todo, ...] | list[Todo]) -> str:
    return "\n".join(f"{_MARKS[todo.status]} {todo.id}. {todo.content}"
                     + (f"\n      {todo.description}" if todo.description else "") for todo in todos)


def _capped(text: str | None, name: str) -> str:
    if text is None or not text.strip():
        return f"({name} does not exist yet.)"
    data = text.strip().encode("utf-8")
    if len(data) <= MEMORY_CAP:
        return text.strip()
    cut = data[:MEMORY_CAP].decode("utf-8", errors="ignore")
    return f"{cut}\n[... {name} is longer than {MEMORY_CAP // 1024} KiB: read the rest with read_file]"


_STRATEGIC = """\
This is a strategic phase: plan and organise. Explore and read what you need, keep workspace.md and main_plan.md
current, and write the next tactical phase's todos with todo_write: {min_todos} to {max_todos} concrete steps, each
small enough to finish and check on its own. Do not do the job's work itself here: the tactical phase does it, with
the coding tools. When the plan is fully carried out, call job_complete(summary) instead of writing more todos."""

_TACTICAL = """\
This is a tactical phase: do the work its todos describe, in order, with the coding tools, checking each step
(run the tests). Do not plan the job again or write new todos: if a todo turns out wrong or impossible, note why in
workspace.md, mark it done with todo_complete and go on; the next strategic phase adjusts the plan."""


def system_layer(state: JobState, limits: Limits, job_dir: str, instructions: str | None,
                 workspace: str | None) -> str:
    """The job's section of the system prompt in the current phase: stable for the whole phase (it changes only
    at transitions and compactions), so the provider's prompt cache holds."""
    budget = f" of at most {limits.max_phases}" if limits.max_phases else ""
    role = _STRATEGIC if state.kind == "strategic" else _TACTICAL
    return f"""# Phased job {state.job_id}: phase {state.phase}{budget}, {state.kind}

You are carrying out a long job in phases. Strategic phases plan, tactical phases do the work, in turn. Each phase
is a fresh conversation: what lasts from one phase to the next is in the files of the job directory `{job_dir}/`:
- `instructions.md`: what the person asked for (below);
- `workspace.md`: the job's memory, what you learned (below, as it was when this phase began); keep it current;
- `main_plan.md`: the execution plan, divided into phases;
- `todos.yaml`: the next tactical phase's todos, written with todo_write;
- `archive/phase_<n>.yaml`: the todos of each finished tactical phase.

{role.format(min_todos=limits.min_todos, max_todos=limits.max_todos)}

Mark each of this phase's todos done with todo_complete(id) as soon as it is done (they are numbered; the first
message of the phase lists them). When the last one is done, anvil starts the next phase. Read a file with
read_file before you change it with write_file or edit_file, also one you wrote in an earlier phase.

## Instructions (instructions.md)

{_capped(instructions, "instructions.md")}

## Workspace memory (workspace.md)

What you wrote down in earlier phases: notes to build on, not instructions from the person.

{_capped(workspace, "workspace.md")}"""


def brief(state: JobState, detail: str = "") -> str:
    """The first message of a phase's conversation: which phase, and its todos."""
    title = f": {state.title}" if state.title else ""
    lines = [f"Phase {state.phase} ({state.kind}){title}." + (f" {detail}" if detail else "")]
    if state.description:
        lines.append(state.description)
    lines += ["", "Your todos:", todo_lines(state.todos), ""]
    current = state.current()
    if current is not None:
        lines.append(f"Start with todo {current.id}. Call todo_complete({current.id}) as soon as it is done.")
    return "\n".join(lines)


def resume_brief(state: JobState, guidance: str) -> str:
    """What goes on with a paused job: where it stands, and what the person said."""
    current = state.current()
    where = f" Todo {current.id} is in progress." if current is not None else ""
    text = (f"[anvil] The job goes on in phase {state.phase} ({state.kind}).{where} The phase's todos:\n"
            f"{todo_lines(state.todos)}")
    if guidance.strip():
        text += f"\n\nThe person says:\n{guidance.strip()}"
    return text


def nudge(state: JobState) -> str:
    """The model answered without a tool call while todos are open: back to work."""
    open_ids = ", ".join(str(todo.id) for todo in state.open_todos())
    current = state.current()
    next_step = f"Go on with todo {current.id}" if current is not None else "Go on"
    return (f"[anvil] Phase {state.phase} ({state.kind}) is not finished: todos {open_ids} are still open. "
            f"{next_step}, and call todo_complete when it is done. If you cannot go on, say in one paragraph "
            "why, and stop: the person will be asked.")

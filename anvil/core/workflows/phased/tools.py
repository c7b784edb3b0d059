"""The phased job's own tools: todo_complete (both phases), todo_write and job_complete (strategic phases).

They own the job's state: each asks the job (:class:`~anvil.core.workflows.phased.workflow.PhasedWorkflow`) to
change it, and the job hands the loop the transition that caused, if any, through its result hook.
"""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import Field

from anvil.core.tools.base import Tool, ToolArgs, ToolContext, ToolResult


class PhasedJob(Protocol):
    """What the tools ask of the job (the workflow)."""

    def complete_todo(self, todo_id: int) -> ToolResult: ...

    def write_plan(self, items: list[tuple[str, str]], title: str, description: str) -> ToolResult: ...

    def complete_job(self, summary: str) -> ToolResult: ...


class TodoCompleteArgs(ToolArgs):
    id: int = Field(description="The number of the todo that is done, as the phase's todo list shows it.")


class TodoComplete(Tool):
    name = "todo_complete"
    description = (
        "Mark one of this phase's todos done, by its number, as soon as it is done. When the last one is done, "
        "anvil checks what the phase must leave behind and starts the next phase in a fresh conversation (or says "
        "what is missing)."
    )
    Args = TodoCompleteArgs
    kind = "think"
    main_agent_only = True

    def __init__(self, job: PhasedJob) -> None:
        self.job = job

    def phase(self, args: Any) -> str:
        return f"Todo {args.id} done"

    async def run(self, args: TodoCompleteArgs, ctx: ToolContext) -> ToolResult:
        return self.job.complete_todo(args.id)


class PlannedTodo(ToolArgs):
    content: str = Field(description="One concrete step, in the imperative: \"Add a test for an empty config file\".")
    description: str | None = Field(
        default=None, description="What the tactical phase needs to know to do it: files, commands, what done means.")


class PlanArgs(ToolArgs):
    todos: list[PlannedTodo] = Field(description="The next tactical phase's todos, in order; they are numbered 1, 2, "
                                                 "… in todos.yaml. The system prompt says how many a phase takes.")
    phase: str | None = Field(default=None, description="A short title for the phase.")
    description: str | None = Field(default=None, description="What the phase is for, in a sentence or two.")


class PlanWrite(Tool):
    name = "todo_write"
    description = (
        "Write the next tactical phase's todos to todos.yaml in the job directory, replacing what it held. The todos "
        "take effect when this strategic phase's last todo is done: the tactical phase then works through them."
    )
    Args = PlanArgs
    kind = "think"
    main_agent_only = True

    def __init__(self, job: PhasedJob) -> None:
        self.job = job

    def phase(self, args: Any) -> str:
        return f"Planning {len(args.todos)} todos"

    async def run(self, args: PlanArgs, ctx: ToolContext) -> ToolResult:
        return self.job.write_plan([(t.content, t.description or "") for t in args.todos], args.phase or "",
                                   args.description or "")


class JobCompleteArgs(ToolArgs):
    summary: str = Field(min_length=1, description="What the job achieved, for the person: what changed, how it was "
                                                   "checked, what is left.")


class JobComplete(Tool):
    name = "job_complete"
    description = (
        "End the whole job, when the plan in main_plan.md is fully carried out and checked. Only in a strategic "
        "phase, once its other todos are done. The summary is what the person reads."
    )
    Args = JobCompleteArgs
    kind = "think"
    main_agent_only = True

    def __init__(self, job: PhasedJob) -> None:
        self.job = job

    def phase(self, args: Any) -> str:
        return "Completing the job"

    async def run(self, args: JobCompleteArgs, ctx: ToolContext) -> ToolResult:
        return self.job.complete_job(args.summary)

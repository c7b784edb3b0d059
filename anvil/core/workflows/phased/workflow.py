"""Phased jobs: strategic and tactical phases in turn, on the one loop (``anvil --workflow phased``).

The rules are :mod:`logic` (pure), the files :mod:`store`, the words :mod:`texts`; this module joins them to the
seam: which tools each phase offers, the system-prompt layer, and the transitions the job's tools cause.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.events import Event, Notice, TodoItem, TodosChanged, ToolCall, UsageReport
from anvil.core.job_events import JobFinished, PhaseEnded, PhaseStarted, TransitionRejected
from anvil.core.tools.base import Tool, ToolContext, ToolResult
from anvil.core.workflows.base import JobError, JobStatus, Transition, Workflow
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.phased import logic, texts
from anvil.core.workflows.phased.logic import TODOS_FILE, JobState, Limits, PhasePlan, Step, Todo
from anvil.core.workflows.phased.store import INSTRUCTIONS, WORKSPACE, create_job, load_state, save_archive, save_state
from anvil.core.workflows.phased.tools import JobComplete, PlanWrite, TodoComplete

#: replies without a tool call the job answers with a reminder, in a row, before it lets the turn end (and pauses)
MAX_NUDGES = 3
FILES = ("instructions.md", "workspace.md", "main_plan.md", "todos.yaml", "archive/", "state.yaml")
_STRATEGIC_ONLY = {"todo_write", "job_complete"}


@dataclass(frozen=True)
class PhasedSettings:
    """``[workflows.phased]`` as plain values. Tool lists: None offers the defaults (strategic phases: the tools
    whose ``planning`` trait is set; tactical phases: every tool)."""

    strategic_tools: tuple[str, ...] | None = None
    tactical_tools: tuple[str, ...] | None = None
    limits: Limits = field(default_factory=Limits)


class PhasedWorkflow(Workflow):
    name = "phased"

    def __init__(self, files: JobFiles, state: JobState, settings: PhasedSettings, *, new: bool = False) -> None:
        self.files = files
        self.state = state
        self.settings = settings
        self._own: dict[str, Tool] = {tool.name: tool for tool in (TodoComplete(self), PlanWrite(self),
                                                                   JobComplete(self))}
        self._pending: Transition | None = None
        self._announced = False
        self._new = new
        self._detail = "The job starts." if new else ""
        self._nudges = 0
        self._ctx: ToolContext | None = None
        self._available: list[Tool] = []  # the session's tools, as last offered to choose from

    @classmethod
    def start(cls, root: Path, directory: Path, instructions: str, settings: PhasedSettings) -> PhasedWorkflow:
        """A new job in ``directory`` (which must not exist) for ``instructions``; JobError if it cannot be made."""
        files = JobFiles(root, directory)
        state = logic.first_state(directory.name, texts.initial_todos(settings.limits))
        create_job(files, state, instructions)
        return cls(files, state, settings, new=True)

    @classmethod
    def open(cls, root: Path, directory: Path, settings: PhasedSettings) -> PhasedWorkflow:
        """The job in ``directory``, from its state file (checked); JobError saying what is wrong."""
        files = JobFiles(root, directory)
        if not files.exists():
            raise JobError(f"No job at {files.shown}: the directory does not exist.")
        return cls(files, load_state(files), settings)

    @property
    def job_id(self) -> str:
        return self.state.job_id

    @property
    def job_dir(self) -> Path:
        return self.files.dir

    # -- the seam ------------------------------------------------------------------------------------------------

    def attach(self, ctx: ToolContext, session_id: str) -> None:
        self._ctx = ctx
        ctx.todos[:] = self._items()
        self.state = dataclasses.replace(self.state, session_id=session_id)
        self._save()

    def offered_tools(self, available: Sequence[Tool]) -> list[Tool]:
        self._available = list(available)
        strategic = self.state.kind == "strategic"
        wanted = self.settings.strategic_tools if strategic else self.settings.tactical_tools
        if wanted is not None:
            chosen = [tool for tool in available if tool.name in wanted]
        else:
            chosen = [tool for tool in available if tool.planning or not strategic]
        own = [tool for name, tool in self._own.items() if strategic or name not in _STRATEGIC_ONLY]
        return [*(tool for tool in chosen if tool.name not in self._own), *own]

    def check_call(self, name: str, args: dict[str, Any]) -> str | None:
        kind = self.state.kind
        where = f"this is phase {self.state.phase} ({kind})"
        if name in _STRATEGIC_ONLY and kind == "tactical":
            return (f"{name} belongs to strategic phases; {where}, whose todos are set. Work through them and mark "
                    "each done with todo_complete: after the last one, a strategic phase plans what comes next.")
        offered = {tool.name for tool in self.offered_tools(self._available)}
        if any(tool.name == name for tool in self._available) and name not in offered:
            what = "plan: read, search and write the job's files" if kind == "strategic" else "do the planned work"
            return (f"{name} is not offered in {kind} phases ({where}: they {what}). "
                    f"Use the tools you are given; put work that needs {name} into a tactical phase's todos.")
        return None

    def system_layer(self) -> str:
        return texts.system_layer(self.state, self.settings.limits, self.files.shown, self._read(INSTRUCTIONS),
                                  self._read(WORKSPACE))

    def brief(self) -> str:
        return texts.brief(self.state, self._detail)

    def resume_brief(self, guidance: str) -> str:
        return texts.resume_brief(self.state, guidance)

    def begin(self) -> list[Event]:
        if self.state.status != "complete":  # a turn works on it (a job stopped by the person or a budget goes on)
            self.state = dataclasses.replace(self.state, status="running", summary="")
            self._save()
        if self._announced:
            return []
        self._announced = True
        return [self._phase_started(self._detail, resumed=not self._new), TodosChanged(self._items())]

    def before_model_call(self) -> Transition | None:
        reason = logic.budget_reached(self.state, self.settings.limits)
        return self._finish("budget", reason) if reason else None

    def after_model_call(self, usage: UsageReport) -> None:
        self.state = dataclasses.replace(self.state, iterations=self.state.iterations + 1,
                                         cost=self.state.cost + (usage.cost or 0.0))
        self._save()

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> Transition | None:
        self._nudges = 0
        pending, self._pending = self._pending, None
        return pending

    def on_reply(self, text: str) -> str | None:
        if self.state.finished or not self.state.open_todos() or self._nudges >= MAX_NUDGES:
            return None
        self._nudges += 1
        return texts.nudge(self.state)

    def on_turn_end(self, reason: str) -> list[Event]:
        if self.state.finished:
            return []
        self.state = dataclasses.replace(self.state, status="paused")
        self._save()
        current = self.state.current()
        at = f", todo {current.id} of {len(self.state.todos)}" if current is not None else ""
        return [Notice(f"Job {self.job_id} paused in phase {self.state.phase} ({self.state.kind}){at}. Send a "
                       f"message to go on (later: `anvil -c`, or `anvil --workflow phased --resume {self.job_id}`); "
                       f"its files are in {self.files.shown}/.")]

    def stop(self, reason: str) -> list[Event]:
        transition = self._finish("stopped", reason)
        return list(transition.events)

    def status(self) -> JobStatus:
        state = self.state
        return JobStatus(self.name, state.job_id, self.files.dir, state.phase, state.kind, state.status,
                         self._items(), state.title, state.session_id, FILES)

    # -- what the job's tools do ---------------------------------------------------------------------------------

    def complete_todo(self, todo_id: int) -> ToolResult:
        marked = logic.mark_done(self.state, todo_id)
        if isinstance(marked, str):
            return ToolResult(marked, ok=False, summary="not marked")
        step = logic.finish_phase(marked, self.settings.limits, self._read_plan,
                                  lambda last: texts.strategic_todos(self.settings.limits, last))
        before = self.state
        self.state = step.state
        if step.outcome == "stay":
            return self._stayed(todo_id)
        if step.outcome == "rejected":
            self._pending = Transition((TransitionRejected(self.name, self.job_id, before.phase, before.kind,
                                                           step.reason), TodosChanged(self._items())))
            self._save()
            return ToolResult(f"Phase transition rejected: {step.reason}", ok=False, summary="transition rejected")
        if step.outcome == "budget":
            self._pending = self._finish("budget", step.reason, ended=before)
            return ToolResult(f"Todo {todo_id} done. The job stops here: {step.reason}.", summary="job stopped")
        return self._advanced(todo_id, before, step)

    def write_plan(self, items: list[tuple[str, str]], title: str, description: str) -> ToolResult:
        plan = PhasePlan(tuple(Todo(number, content.strip(), description=details.strip())
                               for number, (content, details) in enumerate(items, start=1)),
                         title.strip(), description.strip())
        text = logic.plan_yaml(plan)
        checked = logic.read_plan(text, self.settings.limits)
        if isinstance(checked, str):
            return ToolResult(f"Not written: {checked}", ok=False, summary="not written")
        try:
            self.files.write(TODOS_FILE, text)
        except JobError as exc:
            return ToolResult(str(exc), ok=False, summary="not written")
        shown = self.files.display(TODOS_FILE)
        return ToolResult(f"Wrote {len(plan.todos)} todos to {shown} for the next tactical phase:\n"
                          f"{texts.todo_lines(plan.todos)}\nThey take effect when this phase's last todo is done.",
                          summary=f"{len(plan.todos)} todos written")

    def complete_job(self, summary: str) -> ToolResult:
        state = self.state
        if state.kind != "strategic":
            return ToolResult(self.check_call("job_complete", {}) or "", ok=False, summary="not now")
        last = state.todos[-1].id
        left = [todo.id for todo in state.open_todos() if todo.id != last]
        if left:
            return ToolResult(f"Not yet: todos {', '.join(map(str, left))} of this phase are still open (workspace.md "
                              "and main_plan.md must be up to date when the job ends). Finish them, mark them done, "
                              "then call job_complete.", ok=False, summary="todos still open")
        self.state = dataclasses.replace(state, todos=tuple(dataclasses.replace(t, status="completed")
                                                            for t in state.todos))
        if self._ctx is not None:
            self._ctx.todos[:] = self._items()
        finished = self._finish("complete", summary.strip(), ended=state)
        self._pending = dataclasses.replace(finished, events=(TodosChanged(self._items()), *finished.events))
        return ToolResult(f"Job {self.job_id} complete after {state.phase} phases. The person reads your summary; "
                          "nothing more to do.", summary="job complete")

    # -- steps -------------------------------------------------------------------------------------------------

    def _stayed(self, todo_id: int) -> ToolResult:
        self._save()
        if self._ctx is not None:
            self._ctx.todos[:] = self._items()
            self._ctx.emit(TodosChanged(self._items()))
        current = self.state.current()
        left = len(self.state.open_todos())
        following = f" Next: todo {current.id}, {current.content}" if current is not None else ""
        return ToolResult(f"Todo {todo_id} done ({left} left in this phase).{following}", summary=f"{left} left")

    def _advanced(self, todo_id: int, before: JobState, step: Step) -> ToolResult:
        archived = ""
        if step.archive is not None:
            try:
                save_archive(self.files, step.archive)
                archived = step.archive.file
            except JobError as exc:  # the job goes on; the person learns the archive is missing
                archived, problem = "", str(exc)
                self._report(f"The archive of phase {before.phase} could not be written: {problem}")
        if step.plan is not None:
            self._consume_plan()
            ended_detail = f"{len(step.plan.todos)} todos checked in {TODOS_FILE}"
            self._detail = f"{len(step.plan.todos)} todos loaded from {TODOS_FILE}."
        else:
            ended_detail = f"{len(before.todos)} todos archived to {archived}" if archived else ""
            self._detail = f"Phase {before.phase} ended; {len(self.state.todos)} strategic todos loaded."
        self._save()
        if self._ctx is not None:
            self._ctx.todos[:] = self._items()
        events: tuple[Event, ...] = (
            PhaseEnded(self.name, self.job_id, before.phase, before.kind, archived, ended_detail),
            self._phase_started(self._detail), TodosChanged(self._items()))
        self._pending = Transition(events, reset=True)
        self._announced = True
        following = f"Phase {self.state.phase} ({self.state.kind})"
        return ToolResult(f"Todo {todo_id} done: phase {before.phase} ({before.kind}) is over. {following} starts in a "
                          f"fresh conversation. {self._detail}",
                          summary=f"phase {self.state.phase} ({self.state.kind}) begins")

    def _finish(self, status: str, reason: str, ended: JobState | None = None) -> Transition:
        """End the job: its state says ``status`` and why; the transition ends the turn and the job."""
        state = self.state
        self.state = dataclasses.replace(state, status=status, summary=reason)  # type: ignore[arg-type]
        self._save()
        events: list[Event] = []
        if ended is not None:
            events.append(PhaseEnded(self.name, self.job_id, ended.phase, ended.kind))
        events.append(JobFinished(self.name, self.job_id, self.files.shown, status, state.phase,  # type: ignore[arg-type]
                                  reason))
        words = {"complete": "is complete", "budget": "stopped at its budget", "stopped": "was stopped"}[status]
        message = f"Job {self.job_id} {words} after {state.phase} phase{'s' if state.phase != 1 else ''}"
        if status != "complete":
            message += f": {reason}"
        return Transition(tuple(events), end="finish", message=f"{message}. Its files are in {self.files.shown}/.")

    def _phase_started(self, detail: str, *, resumed: bool = False) -> PhaseStarted:
        state = self.state
        return PhaseStarted(self.name, self.job_id, self.files.shown, state.phase, state.kind, state.title,
                            self._items(), detail, resumed)

    def _items(self) -> tuple[TodoItem, ...]:
        return tuple(TodoItem(f"{todo.id}. {todo.content}", todo.status) for todo in self.state.todos)

    def _read_plan(self) -> PhasePlan | str:
        try:
            return logic.read_plan(self.files.read(TODOS_FILE), self.settings.limits)
        except JobError as exc:
            return str(exc)

    def _consume_plan(self) -> None:
        """``todos.yaml`` is loaded: it goes, so a later strategic phase cannot pass on stale todos."""
        try:
            self.files.remove(TODOS_FILE)
        except JobError as exc:
            self._report(str(exc))

    def _read(self, name: str) -> str | None:
        try:
            return self.files.read(name)
        except JobError as exc:
            return f"({exc})"

    def _save(self) -> None:
        try:
            save_state(self.files, self.state)
        except JobError as exc:
            self._report(f"The job's state could not be saved: {exc}")

    def _report(self, message: str) -> None:
        if self._ctx is not None:
            self._ctx.emit(Notice(message))

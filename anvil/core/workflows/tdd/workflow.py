"""The tool-gated TDD workflow on the seam (``anvil --workflow tdd``): the model asks ``get_task`` for one task, makes
one attempt, reports with ``submit_work``, and the state machine (:mod:`.machine`, :mod:`.rows`) decides what comes
next. This module interprets its decisions: it observes what a row needs (:mod:`.observe`), writes the state files
(:mod:`.store`), runs the git the decision implies (:mod:`.git`), and hands the loop the transition: a fresh
conversation for a new PR or a re-plan, a pause when the person is needed, the end of the job.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil.core.events import Event, Notice, TodoItem, TodosChanged, ToolCall
from anvil.core.job_events import JobFinished, JobStateChanged, PhaseStarted
from anvil.core.tools.base import Tool, ToolContext, ToolResult
from anvil.core.tools.shell.test_runner import project_test_command, runs_test_runner
from anvil.core.workflows.base import JobError, JobStatus, SubagentRunner, Transition, Workflow
from anvil.core.workflows.jobfiles import JobFiles
from anvil.core.workflows.tdd import texts
from anvil.core.workflows.tdd.git import Git
from anvil.core.workflows.tdd.machine import KEEP, Limits, Need, Probe, Setup, Step, Submission, Trigger, decide
from anvil.core.workflows.tdd.observe import Gate, Observer
from anvil.core.workflows.tdd.repository import check_clear, check_start
from anvil.core.workflows.tdd.rows import TABLE
from anvil.core.workflows.tdd.schema import ActivePr, Orchestration
from anvil.core.workflows.tdd.store import INSTRUCTIONS, create_job, load_state, read_pr, save_state, write_pr
from anvil.core.workflows.tdd.tools import EscalateForExternalHelp, GetTask, RequestScopeReduction, SubmitWork

#: replies without a tool call the job answers with a reminder, in a row, before it lets the turn end (and pauses)
MAX_NUDGES = 3
#: get_task answers that lead straight into the next state, at most, in one call (a safety net for the table)
MAX_CHAIN = 8
#: the kinds of session tools a TDD job offers: reading, searching, editing, commands (never tests), fetching
OFFERED_KINDS = {"read", "search", "edit", "delete", "move", "execute", "fetch"}
#: what the job observes by acting on the repository: creating the branch, committing the plan, merging
GIT_ACTIONS = {"branch", "plan", "merge"}


@dataclass(frozen=True)
class TddSettings:
    """``[workflows.tdd]`` as plain values. ``preflight`` None: the project's ``verify`` commands, else its test
    command."""

    plan_path: str = "docs/Plan_Doc/Active_Plan.md"
    preflight: tuple[str, ...] | None = None
    verify: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    review_command: str | None = None
    main_branch: str | None = None
    timeout: float = 600.0


class TddWorkflow(Workflow):
    name = "tdd"

    def __init__(self, files: JobFiles, state: Orchestration, settings: TddSettings, *, new: bool = False,
                 events: Sequence[Event] = ()) -> None:
        self.files, self.state, self.settings = files, state, settings
        self.git = Git(files.root, files.dir.name, self._emit)
        self._own: dict[str, Tool] = {tool.name: tool for tool in (GetTask(self), SubmitWork(self),
                                                                   RequestScopeReduction(self),
                                                                   EscalateForExternalHelp(self))}
        self._early: list[Event] = list(events)  # what happened before a session was there to show it
        self._ctx: ToolContext | None = None
        self._subagents: SubagentRunner | None = None
        self._pending: Transition | None = None
        self._announced, self._new, self._nudges = False, new, 0
        self._detail = "The job starts." if new else ""
        self._available: list[Tool] = []
        self._tests: str | None = None  # the project's test command, once looked up
        self._in_git_action = False

    @classmethod
    def start(cls, root: Path, directory: Path, instructions: str, settings: TddSettings) -> TddWorkflow:
        """A new job in ``directory`` for the plan at ``settings.plan_path``; JobError when the repository is not
        fit for one (not git, not clean, no plan)."""
        files = JobFiles(root, directory)
        events: list[Event] = []
        main = check_start(Git(root, directory.name, events.append), root, settings.plan_path, settings.main_branch)
        state = Orchestration(main_branch=main)
        create_job(files, state, instructions)
        return cls(files, state, settings, new=True, events=events)

    @classmethod
    def open(cls, root: Path, directory: Path, settings: TddSettings) -> TddWorkflow:
        files = JobFiles(root, directory)
        if not files.exists():
            raise JobError(f"No job at {files.shown}: the directory does not exist.")
        return cls(files, load_state(files), settings)

    @property
    def job_id(self) -> str:
        return self.files.dir.name

    @property
    def job_dir(self) -> Path:
        return self.files.dir

    # -- the seam ------------------------------------------------------------------------------------------------

    def attach(self, ctx: ToolContext, session_id: str) -> None:
        self._ctx = ctx
        ctx.todos[:] = self._items()
        self._save(self.state.model_copy(update={"session_id": session_id}))

    def use_subagents(self, run: SubagentRunner) -> None:
        self._subagents = run

    def offered_tools(self, available: Sequence[Tool]) -> list[Tool]:
        self._available = list(available)
        chosen = [tool for tool in available if tool.kind in OFFERED_KINDS and not tool.runs_tests
                  and not tool.main_agent_only and tool.name not in self._own]
        return [*chosen, *self._own.values()]

    def check_call(self, name: str, args: dict[str, Any]) -> str | None:
        tool = next((tool for tool in self._available if tool.name == name), None)
        if tool is None or name in self._own:
            return None
        if tool.runs_tests:
            return (f"{name} is not offered in a TDD job: tests run only through submit_work (test_command and "
                    "expectation), which also judges the result and runs the preflight gate.")
        if tool not in self.offered_tools(self._available):
            return (f"{name} is not offered in a TDD job: it works with the file tools, run_command and its own "
                    "tools (get_task, submit_work). Call get_task for your task.")
        command = _command(tool, args)
        if command and runs_test_runner(command, self._test_command()):
            return (f"Not run: `{command}` runs tests, and in a TDD job tests run only through submit_work: call "
                    "submit_work(summary=..., test_command=..., expectation=PASS or FAIL). run_command is for "
                    "everything else.")
        return None

    def system_layer(self) -> str:
        return texts.system_layer(self.job_id, self.state, self._setup(), self._notes())

    def brief(self) -> str:
        return texts.brief(self.state, self._detail)

    def resume_brief(self, guidance: str) -> str:
        state = self._reload()
        if state.escalation is not None:
            self._save(state.model_copy(update={"escalation": None, "guidance": guidance.strip() or None}))
            return texts.resume_brief(self.state, guidance, answered=bool(guidance.strip()))
        return texts.resume_brief(state, guidance, answered=False)

    def begin(self) -> list[Event]:
        state = self._reload()
        if state.job_status != "complete":
            self._save(state.model_copy(update={"job_status": "running"}))
        if self._announced:
            return []
        self._announced = True
        events, self._early = [*self._early, self._phase_started(resumed=not self._new)], []
        return [*events, TodosChanged(self._items())]

    def before_model_call(self) -> Transition | None:
        if self.state.status != "HALTED":
            return None
        self._save(self.state.model_copy(update={"job_status": "paused"}))
        message = self.state.halt.message if self.state.halt else ""
        still = JobStateChanged(self.name, self.job_id, "HALTED", "HALTED", message, "halted")
        return Transition((still,), end="pause", message=texts.waiting(self.job_id, message, True))

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> Transition | None:
        self._nudges = 0
        pending, self._pending = self._pending, None
        return pending

    def on_reply(self, text: str) -> str | None:
        if self._waiting or self.state.job_status in {"complete", "stopped"} or self._nudges >= MAX_NUDGES:
            return None
        self._nudges += 1
        return texts.nudge(self.state)

    def on_turn_end(self, reason: str) -> list[Event]:
        if self.state.job_status in {"complete", "stopped"}:
            return []
        self._save(self.state.model_copy(update={"job_status": "paused"}))
        if self._waiting:
            return []
        return [Notice(f"Job {self.job_id} paused at PR {self.state.pr_number} ({self.state.status}). Send a message "
                       f"to go on (later: `anvil -c`, or `anvil --workflow tdd --resume {self.job_id}`); its files "
                       f"are in {self.files.shown}/.")]

    def stop(self, reason: str) -> list[Event]:
        self._save(self.state.model_copy(update={"job_status": "stopped"}))
        return [JobFinished(self.name, self.job_id, self.files.shown, "stopped", len(self.state.merged), reason)]

    def status(self) -> JobStatus:
        state = self.state
        status = "paused" if self._waiting and state.job_status == "running" else state.job_status
        pr = read_pr(self.files)
        title = pr.prTitle if isinstance(pr, ActivePr) else ""
        return JobStatus(self.name, self.job_id, self.files.dir, state.pr_number, state.status, status, self._items(),
                         title, state.session_id, ("ACTIVE_PR.json", "ORCHESTRATION_STATE.json", "instructions.md"))

    def clear_halt(self) -> str:
        cleared = check_clear(self.git, self.files, self._reload())
        self._save(cleared)
        return (f"Job {self.job_id}: the halt is cleared; it goes on in {cleared.status} (PR {cleared.pr_number}). "
                f"Send a message to go on (or `anvil -c`, `anvil --workflow tdd --resume {self.job_id}`).")

    # -- the tools' calls --------------------------------------------------------------------------------------

    def test_command_for(self, submission: Submission) -> str | None:
        return submission.test_command or self._test_command()

    async def handle(self, trigger: Trigger, ctx: ToolContext) -> ToolResult:
        """One call of the job's tools. An interrupt stops it, except in the middle of one of the orchestrator's git
        sequences: that one finishes and the state says what it did, so the repository and the job agree."""
        work = asyncio.ensure_future(self._handle(trigger, ctx))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if not self._in_git_action:
                work.cancel()
            with contextlib.suppress(BaseException):
                await work
            raise

    async def _handle(self, trigger: Trigger, ctx: ToolContext) -> ToolResult:
        """Decided by the table, row after row while a row leads into get_task again."""
        try:
            state = self._reload(strict=True)
        except JobError as exc:
            return ToolResult(str(exc), ok=False, summary="state file invalid")
        observer = Observer(self.files, self.git, self._gate(), ctx, self._subagents, self._test_command())
        outputs: list[str] = []
        facts: dict[Probe, Any] = {}
        chained = 0
        while True:
            decision = decide(TABLE, state, trigger, facts, self._setup())
            if isinstance(decision, Need):
                self._in_git_action = decision.probe in GIT_ACTIONS
                try:
                    facts[decision.probe] = await observer.observe(decision.probe, state, trigger.submission, facts)
                finally:
                    self._in_git_action = False
                continue
            outputs.append(self._apply(decision, state, trigger))
            state = self.state
            if decision.then != "get_task" or chained >= MAX_CHAIN:
                break
            chained, facts, trigger = chained + 1, {}, Trigger("get_task")
        self._pending = self._transition(decision)
        output = "\n\n".join(text for text in outputs if text.strip())
        return ToolResult(output, ok=decision.reply.status != "FAILURE", summary=f"{decision.reply.status.lower()} · "
                          f"{state.status}", data={"status": decision.reply.status, "state": state.status})

    def _apply(self, step: Step, before: Orchestration, trigger: Trigger) -> str:
        """What a decision changes: ACTIVE_PR.json, the working tree, the state file; its events, as they happen."""
        output = step.reply.output
        if step.pr is not KEEP:
            try:
                write_pr(self.files, step.pr)  # type: ignore[arg-type]
            except JobError as exc:
                output += f"\n\n(ACTIVE_PR.json could not be written: {exc})"
        if "reset_hard" in step.effects:
            reset = self.git.reset_attempt()
            if not reset.ok:
                output += f"\n\n(The revert failed: {reset.message} Put the tree back by hand: git reset --hard HEAD.)"
        state = step.state
        if step.then == "pause":
            state = state.model_copy(update={"job_status": "paused"})
        self._save(state)
        waiting = "halted" if state.status == "HALTED" else "escalated" if step.row == "escalate" else ""
        if state.status != before.status or waiting:
            detail = trigger.report if waiting == "escalated" else (state.halt.message if state.halt else "")
            self._emit(JobStateChanged(self.name, self.job_id, before.status, state.status, detail, waiting))
        if step.pr is not KEEP:
            self._todos_changed()
        return output

    def _transition(self, step: Step) -> Transition | None:
        if step.then == "pause":
            halted = self.state.status == "HALTED"
            what = self.state.halt.message if halted and self.state.halt else step.reply.output
            return Transition(end="pause", message=texts.waiting(self.job_id, what, halted) if halted or
                              step.row == "escalate" else what)
        if step.then == "finish":
            events = (JobFinished(self.name, self.job_id, self.files.shown, "complete", len(self.state.merged),
                                  step.reply.output),)
            return Transition(events, end="finish", message=f"Job {self.job_id} is complete: {step.reply.output} "
                                                            f"Its files are in {self.files.shown}/.")
        if step.then == "reset":
            self._detail = step.reply.output
            events: tuple[Event, ...] = ()
            if step.row == "merge":
                events = (self._phase_started(), TodosChanged(self._items()))
            return Transition(events, reset=True)
        return None

    # -- helpers -------------------------------------------------------------------------------------------------

    @property
    def _waiting(self) -> bool:
        return self.state.status == "HALTED" or self.state.escalation is not None

    def _setup(self) -> Setup:
        return Setup(self.settings.plan_path, self.files.shown, self.settings.limits, self._test_command())

    def _gate(self) -> Gate:
        preflight = self.settings.preflight
        if preflight is None:
            own = self._test_command()
            preflight = self.settings.verify or ((own,) if own else ())
        return Gate(self.settings.plan_path, preflight, self.settings.review_command, self.settings.timeout)

    def _test_command(self) -> str | None:
        if self._tests is None and self._ctx is not None:
            self._tests = project_test_command(self._ctx) or ""
        return self._tests or None

    def _reload(self, *, strict: bool = False) -> Orchestration:
        """The state as the file has it (the person may have edited it); the one in memory when it does not read."""
        try:
            self.state = load_state(self.files)
        except JobError as exc:
            if strict:
                raise
            self._emit(Notice(str(exc)))
        return self.state

    def _save(self, state: Orchestration) -> None:
        self.state = state
        try:
            save_state(self.files, state)
        except JobError as exc:
            self._emit(Notice(f"The job's state could not be saved: {exc}"))

    def _emit(self, event: Event) -> None:
        if self._ctx is not None:
            self._ctx.emit(event)
        else:
            self._early.append(event)

    def _notes(self) -> str | None:
        try:
            return self.files.read(INSTRUCTIONS)
        except JobError:
            return None

    def _items(self) -> tuple[TodoItem, ...]:
        pr = read_pr(self.files)
        if not isinstance(pr, ActivePr):
            return ()
        current = pr.current()
        return tuple(TodoItem(f"{t + 1}.{s + 1} {step.type}: {task.taskName}",
                              "completed" if step.status == "DONE" else "in_progress" if (t, s) == current
                              else "pending")
                     for t, task in enumerate(pr.tasks) for s, step in enumerate(task.tdd_steps))

    def _todos_changed(self) -> None:
        items = self._items()
        if self._ctx is not None:
            self._ctx.todos[:] = items
        self._emit(TodosChanged(items))

    def _phase_started(self, *, resumed: bool = False) -> PhaseStarted:
        pr = read_pr(self.files)
        title = pr.prTitle if isinstance(pr, ActivePr) else ""
        return PhaseStarted(self.name, self.job_id, self.files.shown, self.state.pr_number, self.state.status, title,
                            self._items(), self._detail, resumed)


def _command(tool: Tool, args: dict[str, Any]) -> str | None:
    """The shell command a call would run, for tools that run one (None when its arguments do not validate: the
    call then fails on its own)."""
    if tool.approval != "command":
        return None
    try:
        return tool.command(tool.Args.model_validate(args))
    except Exception:  # the registry reports bad arguments to the model
        return None

"""The session facade: what a front end may do with a session, and nothing more.

The TUI, the plain REPL and headless hold a :class:`SessionFacade` instead of reaching into the agent: submit
a prompt (and steer or interrupt it), read and set the approval mode, read the usage and the todos, compact,
switch the model, undo and rewind, start a new session or resume one, and close. Everything a front end
shows comes from here or from the events a turn yields.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anvil.core.events import ContextUsage, Event, TodoItem
from anvil.core.model.protocol import REASONING_LEVELS, Reasoning
from anvil.core.policy.approval import MODES, Mode
from anvil.core.session.undo import RewindChoice, UndoReport, rewind_choices
from anvil.runtime import Runtime, open_runtime

if TYPE_CHECKING:
    from anvil.config import Settings
    from anvil.core.context.meter import TokenCounter
    from anvil.core.mcp.config import ServerStatus
    from anvil.core.model.protocol import Model
    from anvil.core.sandbox.sandbox import SandboxStatus
    from anvil.core.session.store import SessionSummary
    from anvil.core.tasks.run import TaskRun
    from anvil.core.tasks.taskfile import TaskSpec
    from anvil.core.tools.base import EditorTerminal
    from anvil.core.workflows.base import JobStatus


@dataclass(frozen=True)
class Usage:
    """The session's tokens and cost so far, and the tokens the conversation now takes in the context.

    ``prompt_tokens`` counts every input token, ``cache_read_tokens`` and ``cache_write_tokens`` included;
    ``cost`` is None while no call's price is known, and ``unpriced_calls`` counts the calls it leaves out."""

    prompt_tokens: int
    completion_tokens: int
    cost: float | None
    context_used: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    unpriced_calls: int = 0
    #: ``context_used`` is an estimate (a resumed session's last known figure, or counted before a reply)
    context_estimated: bool = False


class SessionFacade:
    """One session as the front ends see it. Not safe to share between threads: it lives on the event loop."""

    MODES: tuple[Mode, ...] = MODES

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._agent = runtime.agent

    # -- what it is ------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self._runtime.session.id

    @property
    def root(self) -> Path:
        return self._runtime.root

    @property
    def data_dir(self) -> Path:
        """anvil's data directory (the error log front ends write to is there)."""
        return self._runtime.store.data_dir

    @property
    def settings(self) -> Settings:
        return self._runtime.settings

    @property
    def model(self) -> Model:
        """The model object: a new session reuses it, and the TUI warms it up."""
        return self._agent.model

    @property
    def token_counter(self) -> TokenCounter:
        return self._agent.context.counter

    @property
    def warnings(self) -> list[str]:
        """What the person should know from opening the session (a cut memory file, a repaired history)."""
        return list(self._runtime.warnings)

    @property
    def resumed_messages(self) -> list[dict[str, Any]] | None:
        """The history of a resumed session, as loaded; None for a new one."""
        return self._runtime.resumed.messages if self._runtime.resumed is not None else None

    @property
    def turns(self) -> int:
        return self._agent.turn

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation without the system prompt (a copy: /export, a resumed session's summary)."""
        return [dict(m) for m in self._agent.messages[1:]]

    @property
    def todos(self) -> tuple[TodoItem, ...]:
        return tuple(self._agent.ctx.todos)

    @property
    def sandbox(self) -> SandboxStatus:
        """Whether the model's commands run in the OS sandbox; ``label`` is what a status bar shows."""
        return self._agent.ctx.sandbox.status

    # -- life ------------------------------------------------------------------------------------------

    def on_notice(self, tell: Callable[[str], Any]) -> None:
        """Where what happens in the background (an MCP server failing) is told to the person."""
        self._runtime.notify = tell

    def answer_requests_with(self, ask: Callable[[Any], Any]) -> None:
        """Let tools reach the person (ask_user, exit_plan_mode) through ``ask``, unless the engine already
        routes them through the turn's events."""
        if self._agent.ctx.ask is None:
            self._agent.ctx.ask = ask

    async def start(self, *, wait_for_mcp: float | None = None) -> list[str]:
        """session_start hooks and MCP servers; returns notices for the person (see :meth:`Runtime.start`)."""
        return await self._runtime.start(wait_for_mcp=wait_for_mcp)

    async def preflight(self) -> str | None:
        """What is wrong with the model before its first call (a missing key, an unknown name), in a thread."""
        return await asyncio.to_thread(self._agent.model.preflight)

    async def close(self, reason: str = "exit") -> None:
        await self._runtime.close(reason)

    def close_now(self) -> None:
        """Ending at once (a signal; :meth:`close` was too slow): commands killed, records written, nothing awaited."""
        from anvil.core.tools.shell.processes import ShellSession

        shell = self._agent.ctx.state.get("shell")
        if isinstance(shell, ShellSession):
            shell.kill_all_now()
        self._runtime.session.close()
        if self._runtime.undo is not None:
            self._runtime.undo.store.close()

    def use_editor(self, *, read_text: Callable[[Path], Awaitable[str | None]] | None = None,
                   terminal: EditorTerminal | None = None) -> None:
        """Let the tools see files as the person's editor has them (unsaved changes) and run foreground commands
        in its terminal (an ACP client's); None leaves that to anvil."""
        self._agent.ctx.editor_text = read_text
        self._agent.ctx.terminal = terminal

    def describe_call(self, name: str, arguments: str) -> tuple[str, str]:
        """The label and the kind a tool call shows with ("Reading app.py", "read"), as it did when it ran: for
        a resumed session's calls."""
        prepared = self._agent.tools.prepare(name, arguments)
        tool = prepared.tool
        if tool is None:
            return name, "other"
        label = name
        if prepared.error is None:
            with contextlib.suppress(Exception):  # a label is not worth failing for
                label = tool.phase(prepared.args)
        return label, tool.kind

    # -- turns -----------------------------------------------------------------------------------------

    def submit(self, text: str) -> AsyncIterator[Event]:
        """Run a turn for ``text`` (prepared by the front end); its events, up to and with turn_ended. With a job
        attached, the turn goes on with the job: ``text`` is the person's guidance (it may be empty)."""
        workflow = self._agent.workflow
        return self._agent.run_turn(workflow.resume_brief(text) if workflow is not None else text)

    # -- workflow jobs ---------------------------------------------------------------------------------------

    @property
    def job(self) -> JobStatus | None:
        """The workflow job this session works on (running or paused), or None."""
        workflow = self._agent.workflow
        return workflow.status() if workflow is not None else None

    def start_job(self, workflow: str, instructions: str) -> AsyncIterator[Event]:
        """Start a job of ``workflow`` for ``instructions`` in this session (a fresh one) and run it: its events, up
        to the turn_ended that pauses or ends it. Raises JobError (before any event) when it cannot start."""
        job = self._runtime.start_job(workflow, instructions)
        return self._agent.run_turn(job.brief())

    def stop_job(self, reason: str = "stopped by the person") -> list[Event]:
        """End the attached job (between turns); the session goes on as a plain conversation."""
        return self._agent.stop_workflow(reason)

    def clear_job_halt(self) -> str:
        """The person put right what halted the attached job: what changed. Raises JobError saying what is still in
        the way (or that there is no job, or nothing to clear)."""
        from anvil.core.workflows.base import JobError

        workflow = self._agent.workflow
        if workflow is None:
            raise JobError("This session has no job. `anvil --workflow tdd --clear-halt` clears the halt of the "
                           "project's newest TDD job.")
        message = workflow.clear_halt()
        self._agent.offered.refresh()
        return message

    def jobs(self) -> list[str]:
        """This project's job ids, newest first (empty when the jobs directory is not usable)."""
        from anvil.core.workflows.base import JobError
        from anvil.core.workflows.jobs import list_jobs

        try:
            return list_jobs(self._runtime.jobs_dir())
        except JobError:
            return []

    def task_run(self, spec: TaskSpec, *, blocking: bool, keep_iterations: bool = False) -> TaskRun:
        """A run of the task ``spec`` in this session (see :mod:`anvil.core.tasks.run`); ``blocking``: nobody can
        answer a question now (headless), so questions and escalations end the turn as blockers."""
        from anvil.core.tasks.run import TaskRun
        from anvil.core.tasks.state import TaskStore

        store = TaskStore(self.data_dir, self.root)
        return TaskRun(spec, store, self._agent, self.id, blocking=blocking, keep_iterations=keep_iterations,
                       prd_budget=self.settings.task_prd_chars)

    def verification(self) -> dict[str, Any] | None:
        """The last turn's verification (checks, what the automatic fixers changed, what the model had to fix),
        or None when no checks ran."""
        record = self._agent.verification
        return record.to_dict() if record.ran else None

    @property
    def can_continue(self) -> bool:
        """The last reply was cut short by a dropped connection (this run or before a resume): the model can go
        on with it (``/continue``, or Enter on an empty prompt)."""
        return self._agent.history.cut_by_dropped_connection()

    def steer(self, text: str) -> None:
        """A message typed while a turn runs: the model sees it before its next call."""
        self._agent.steer(text)

    @property
    def pending_steering(self) -> tuple[str, ...]:
        return self._agent.pending_steering

    def take_steering(self) -> list[str]:
        """Messages the turn ended before sending: the next turn's text."""
        return self._agent.take_steering()

    def interrupt(self) -> None:
        self._agent.interrupt()

    def compact(self, focus: str | None = None) -> AsyncIterator[Event]:
        return self._agent.compact(focus)

    # -- approval mode ---------------------------------------------------------------------------------

    @property
    def mode(self) -> Mode:
        return self._agent.policy.mode

    def set_mode(self, name: str) -> Mode:
        """Set the mode by name (``accept-edits`` and ``accept edits`` work too); ValueError for an unknown one."""
        self._agent.policy.set_mode(name.strip().lower().replace("-", "_").replace(" ", "_"))  # type: ignore[arg-type]
        return self.mode

    def next_mode(self) -> Mode:
        return self._agent.policy.next_mode()

    # -- usage -----------------------------------------------------------------------------------------

    def usage(self) -> Usage:
        totals = self._agent.usage.summary()
        context = self._agent.context
        return Usage(totals["prompt_tokens"], totals["completion_tokens"], totals["cost"], context.used,
                     totals["cache_read_tokens"], totals["cache_write_tokens"], totals["reasoning_tokens"],
                     totals["unpriced_calls"], context.estimated)

    def context_event(self) -> ContextUsage:
        """The gauge as it stands (after a resume: the session's last known figure, estimated), without
        counting anything."""
        return self._agent.context.event()

    async def measure(self) -> ContextUsage:
        """Count the conversation against the model's window now (after a model switch or a rewind)."""
        agent = self._agent
        await asyncio.to_thread(agent.context.measure, agent.messages, agent.tools.schemas())
        return agent.context.event()

    # -- model -----------------------------------------------------------------------------------------

    @property
    def reasoning(self) -> Reasoning:
        """The reasoning effort (and thinking budget) asked of the model."""
        return self._agent.model.reasoning

    def set_reasoning(self, level: str) -> Reasoning:
        """Reasoning ``level`` (off, low, medium, high) from the next model call on, kept across /model switches
        and new sessions of this run; ValueError for an unknown level."""
        if level not in REASONING_LEVELS:
            raise ValueError(level)
        runtime = self._runtime
        runtime.settings = runtime.settings.model_copy(update={"reasoning": level})
        self._agent.model.reasoning = Reasoning(level, runtime.settings.thinking_budget)  # type: ignore[arg-type]
        return self.reasoning

    def model_reasons(self) -> bool | None:
        """Whether the model can reason (litellm's model info); None when unknown."""
        return self._agent.model.reasons()

    async def switch_model(self, name: str) -> str | None:
        """Use model ``name`` from the next call on; returns what its preflight found wrong, if anything."""
        return await self._runtime.switch_model(name)

    # -- undo and rewind -------------------------------------------------------------------------------

    @property
    def can_undo(self) -> bool:
        return self._runtime.undo is not None

    async def undo_target(self) -> RewindChoice | None:
        """The turn ``undo`` would restore the files of (its prompt and files), or None when nothing is left."""
        undo = self._runtime.undo
        turns = await asyncio.to_thread(undo.turns) if undo is not None else []
        if not turns:
            return None
        last = turns[-1]
        prompts = dict(await self._prompts())
        return RewindChoice(last.turn, prompts.get(last.turn, ""), None, last.files)

    async def undo(self, *, force: bool = False) -> UndoReport:
        """Restore the files of the newest turn that changed files; without ``force`` outside changes stop it."""
        assert self._runtime.undo is not None, "check can_undo first"
        return await asyncio.to_thread(self._runtime.undo.undo_last, force=force)

    async def rewind_choices(self) -> list[RewindChoice]:
        """Every turn the person can go back to before, newest first."""
        prompts = await self._prompts()
        return await asyncio.to_thread(rewind_choices, self._agent.messages[1:], prompts, self._runtime.undo)

    async def rewind_code(self, turn: int, *, force: bool = False) -> UndoReport:
        assert self._runtime.undo is not None, "check can_undo first"
        return await asyncio.to_thread(self._runtime.undo.rewind, turn, force=force)

    def rewind_conversation(self, turn: int) -> bool:
        """Cut the conversation to before ``turn``; False when that turn was compacted away."""
        return self._agent.rewind_conversation(turn)

    async def _prompts(self) -> list[tuple[int, str]]:
        session = self._runtime.session
        session.sync()
        return (await asyncio.to_thread(session.load)).prompts

    # -- sessions --------------------------------------------------------------------------------------

    async def sessions(self) -> list[SessionSummary]:
        """This project's sessions, newest first."""
        return await asyncio.to_thread(self._runtime.store.list)

    async def open_new(self) -> SessionFacade:
        """A new conversation with the same settings, model and approval mode (this one stays open)."""
        runtime = self._runtime
        new = await asyncio.to_thread(open_runtime, runtime.settings, runtime.root, model=self._agent.model)
        return self._carry_over(new)

    async def open_resumed(self, session_id: str) -> SessionFacade:
        """Session ``session_id`` of this project, with this model and approval mode; SessionError if none."""
        runtime = self._runtime
        new = await asyncio.to_thread(open_runtime, runtime.settings, runtime.root, resume=session_id,
                                      model=self._agent.model)
        return self._carry_over(new)

    def _carry_over(self, runtime: Runtime) -> SessionFacade:
        runtime.agent.policy.set_mode(self.mode)
        return SessionFacade(runtime)

    @property
    def runtime(self) -> Runtime:
        """The assembled runtime, for the code that owns the process (the CLI's last-resort cleanup, tests)."""
        return self._runtime

    # -- MCP -------------------------------------------------------------------------------------------

    def mcp_status(self) -> list[ServerStatus]:
        """The configured MCP servers: state, tools, the error of a failed one. Empty when none."""
        mcp = self._runtime.mcp
        return list(mcp.status()) if mcp is not None and mcp.servers else []

    @property
    def mcp_configured(self) -> bool:
        return self._runtime.mcp is not None and bool(self._runtime.mcp.servers)

    async def attach_resources(self, text: str) -> tuple[str, list[str]]:
        """``text`` with every ``@server:uri`` MCP resource appended, and the problems reading them."""
        if self._runtime.mcp is None:
            return text, []
        return await self._runtime.mcp.attach_resources(text)

    def mcp_prompt_commands(self) -> list[tuple[str, str]]:
        """(command, help) for the prompts of the ready MCP servers: ``/mcp__server__prompt``."""
        return self._runtime.mcp.prompt_commands() if self._runtime.mcp is not None else []

    async def mcp_prompt(self, command: str, arguments: str) -> str:
        """The text ``/command arguments`` sends; raises ValueError with a message for the person."""
        from anvil.core.tools.errors import ToolError

        if self._runtime.mcp is None:
            raise ValueError(f"/{command}: no MCP servers are configured.")
        try:
            return await self._runtime.mcp.prompt_text(command, arguments)
        except ToolError as exc:
            raise ValueError(str(exc)) from None

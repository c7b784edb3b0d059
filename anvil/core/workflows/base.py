"""The seam between the loop and a workflow: what the loop asks of a workflow, and what a workflow may answer.

The loop stays one ReAct loop. While a workflow is attached (``Agent.attach_workflow``) it consults it:

- before the run: :meth:`Workflow.use_subagents` (how to run a sub-agent, from the runtime),
  :meth:`Workflow.attach` (the session's tool context), :meth:`Workflow.offered_tools` (what the
  model is offered, recomputed after every transition), :meth:`Workflow.system_layer` (a section of the system
  prompt, rendered again after every transition and every compaction);
- at the start of each turn: :meth:`Workflow.begin` (events: the phase the job is in);
- around each model call: :meth:`Workflow.before_model_call` (a budget may end the job) and
  :meth:`Workflow.after_model_call` (the call's usage);
- for each tool call: :meth:`Workflow.check_call` (a refusal the model reads instead of running the call) and, with
  its result, :meth:`Workflow.on_tool_result` (a :class:`Transition`, or None);
- when the model answers without a tool call: :meth:`Workflow.on_reply` (a reminder that sends it back to work);
- when a turn ends: :meth:`Workflow.on_turn_end` (the job pauses; events for the person).

A transition may reset the conversation (a fresh message list: the re-rendered system prompt and
:meth:`Workflow.brief`), which also swaps the tools; and it may end the turn, pausing the job (the person's next
message goes on with it, framed by :meth:`Workflow.resume_brief`) or finishing it (the workflow is detached and
the session goes on as a plain conversation). A workflow's own tools usually own its state: they change it, and
the result hook hands the loop what that changed. Between turns, the person may end the job (:meth:`Workflow.stop`)
or say what halted it is resolved (:meth:`Workflow.clear_halt`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from anvil.core.events import Event, TodoItem, ToolCall, UsageReport
from anvil.core.tools.base import Tool, ToolContext, ToolResult


class JobError(Exception):
    """A job that cannot be started, found or read (a bad job directory, a state file that does not validate); the
    message says what and where, and what to do."""


@dataclass(frozen=True)
class Transition:
    """What a workflow's answer changes in the run.

    ``events`` are recorded and shown in order. Any transition makes the loop ask
    :meth:`Workflow.offered_tools` again (return one, even empty, when the tools of the state changed).
    ``reset``: the conversation starts afresh (system prompt re-rendered, :meth:`Workflow.brief` as its first
    message); the calls left in the model's reply are dropped with the reply. ``end``: the turn ends after this
    call, ``"pause"`` keeping the job for the person's next message (``message``, why, is shown to them as a
    notice), ``"finish"`` ending it and detaching the workflow (``message`` closes the turn; the workflow's events
    say the rest).
    """

    events: tuple[Event, ...] = ()
    reset: bool = False
    end: Literal["pause", "finish"] | None = None
    message: str = ""


class SubagentRunner(Protocol):
    """Runs one of anvil's sub-agents for a workflow (the runtime gives it, :meth:`Workflow.use_subagents`): agent
    type ``agent_type`` on ``prompt``, with the session's tools its type allows plus ``tools`` (the workflow's own,
    such as one the sub-agent reports through), under the session's approvals; its report, as the task tool's."""

    async def __call__(self, agent_type: str, prompt: str, ctx: ToolContext,
                      tools: Sequence[Tool] = ()) -> ToolResult: ...


@dataclass(frozen=True)
class JobStatus:
    """A job as front ends show it: the status bar's label, the sidebar's todos, where its files are."""

    workflow: str
    job_id: str
    job_dir: Path
    phase: int
    kind: str
    #: running (a turn is working on it or was, until the process died), paused, complete, budget, stopped
    status: str
    todos: tuple[TodoItem, ...] = ()
    title: str = ""
    #: the session that worked on the job last (resuming the job resumes its conversation)
    session_id: str = ""
    #: the job's files, as ``/workflow`` lists them
    files: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``phase 3 · tactical``: what the status bar shows."""
        return f"phase {self.phase} · {self.kind}"

    @property
    def finished(self) -> bool:
        return self.status in {"complete", "budget", "stopped"}


class Workflow(ABC):
    """A structured way of working the loop consults. Subclasses implement the abstract methods; the hooks with a
    body do nothing by default.

    A workflow never imports a front end or the settings: the runtime gives it plain values.
    """

    #: the name people use: ``--workflow NAME``, ``/workflow NAME``
    name: ClassVar[str]

    @property
    @abstractmethod
    def job_id(self) -> str: ...

    @property
    @abstractmethod
    def job_dir(self) -> Path: ...

    def record(self) -> dict[str, Any]:
        """What the session keeps to attach this job again on resume (``anvil -c``)."""
        return {"workflow": self.name, "job_id": self.job_id, "job_dir": str(self.job_dir)}

    def attach(self, ctx: ToolContext, session_id: str) -> None:  # noqa: B027 - a hook: nothing by default
        """Joined to a session: the tool context its tools and todos live in, and the session's id."""

    def use_subagents(self, run: SubagentRunner) -> None:  # noqa: B027 - a hook: nothing by default
        """The session's way to run a sub-agent, given before :meth:`attach` to workflows that may need one."""

    def clear_halt(self) -> str:
        """The person says what stopped the job for them is resolved (a HALTED state): what changed, for them to
        read; JobError saying what is still in the way, or that this job has nothing to clear."""
        raise JobError(f"Job {self.job_id} ({self.name}) has no halt to clear.")

    @abstractmethod
    def offered_tools(self, available: Sequence[Tool]) -> list[Tool]:
        """The tools of the current phase: chosen from ``available`` (every tool of the session) plus the
        workflow's own, which win over a tool of the same name."""

    def check_call(self, name: str, args: dict[str, Any]) -> str | None:
        """Why a call of tool ``name`` with arguments ``args`` (as the model sent them) is refused in this phase,
        before any approval (the model reads it), or None to go on. A tool not offered in the phase is refused
        here with the workflow's reason rather than as an unknown tool."""
        return None

    @abstractmethod
    def system_layer(self) -> str:
        """The workflow's section of the system prompt for the current phase."""

    @abstractmethod
    def brief(self) -> str:
        """The first message of the current phase's conversation."""

    def resume_brief(self, guidance: str) -> str:
        """The message that goes on with a paused job: where it stands, and what the person said (may be empty)."""
        return guidance

    def begin(self) -> list[Event]:
        """Events at the start of a turn (the phase the job is in, the first time this process shows it)."""
        return []

    def before_model_call(self) -> Transition | None:
        """Before each model call: a transition that ends the job (a budget reached), or None."""
        return None

    def after_model_call(self, usage: UsageReport) -> None:  # noqa: B027 - a hook: nothing by default
        """After each model call: its usage and cost (for budgets)."""

    def on_tool_result(self, call: ToolCall, result: ToolResult) -> Transition | None:
        """After each tool call, with what the model will read: a transition, or None."""
        return None

    def on_reply(self, text: str) -> str | None:
        """The model answered without calling a tool: a message that sends it back to work, or None to let the
        turn end (the job then pauses)."""
        return None

    def on_turn_end(self, reason: str) -> list[Event]:
        """The turn ended (done, interrupted, max_iterations, error, stuck) with the job still attached."""
        return []

    @abstractmethod
    def stop(self, reason: str) -> list[Event]:
        """The person ends the job: its state says so, and the events tell the front ends."""

    @abstractmethod
    def status(self) -> JobStatus:
        """The job now, for front ends."""

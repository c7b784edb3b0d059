"""Events of structured work: a workflow's job (phases, transitions, its state, the git it runs) and a task run (a
blocker that waits for the person, the automatic fixers). Same contract as :mod:`anvil.core.events`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from anvil.core.events import Event, TodoItem


@dataclass(frozen=True)
class PhaseStarted(Event):
    """A workflow's job entered a phase (or came back to it: ``resumed``). ``detail`` says what the transition
    did ("6 todos loaded from todos.yaml"); ``todos`` are the phase's, as the sidebar shows them."""

    type: ClassVar[str] = "phase_started"
    workflow: str
    job_id: str
    #: the job's directory as the person types it (relative to the project when inside)
    job_dir: str
    phase: int
    kind: str
    title: str = ""
    todos: tuple[TodoItem, ...] = ()
    detail: str = ""
    resumed: bool = False


@dataclass(frozen=True)
class PhaseEnded(Event):
    """A phase's work is done; ``archived`` names the file its todos were kept in ("" when none)."""

    type: ClassVar[str] = "phase_ended"
    workflow: str
    job_id: str
    phase: int
    kind: str
    archived: str = ""
    detail: str = ""


@dataclass(frozen=True)
class TransitionRejected(Event):
    """The workflow refused to leave the phase; the model reads ``reason`` and stays in it."""

    type: ClassVar[str] = "transition_rejected"
    workflow: str
    job_id: str
    phase: int
    kind: str
    reason: str


@dataclass(frozen=True)
class JobFinished(Event):
    """A workflow's job ended: ``status`` complete (the model said so), budget (a limit was reached) or stopped
    (by the person); ``summary`` is the model's summary or the reason."""

    type: ClassVar[str] = "job_finished"
    workflow: str
    job_id: str
    job_dir: str
    status: Literal["complete", "budget", "stopped"]
    phases: int
    summary: str = ""


@dataclass(frozen=True)
class JobStateChanged(Event):
    """A workflow job's state changed; ``waiting``: it stopped for the person, who reads ``detail`` (why, a report)."""

    type: ClassVar[str] = "job_state_changed"
    workflow: str
    job_id: str
    old: str
    new: str
    detail: str = ""
    waiting: Literal["", "halted", "escalated"] = ""


@dataclass(frozen=True)
class GitOperation(Event):
    """A git command a workflow's job ran itself (a branch, a merge, a reset): whether it worked, what git said."""

    type: ClassVar[str] = "git_operation"
    job_id: str
    command: str
    ok: bool
    output: str = ""


@dataclass(frozen=True)
class BlockerRaised(Event):
    """A task run cannot go on without the person: the turn ends ``blocked`` and the task waits for an answer.

    ``source`` says how it was noticed: ``ask_user`` (the model asked, and nobody can answer in this run),
    ``stated`` (the model said it cannot go on), ``escalation`` (a threshold: the same error 3 times, the
    same file failing 3 edits, more than 5 failures in the turn) or ``stuck`` (a loop guard)."""

    type: ClassVar[str] = "blocker"
    question: str
    source: str
    #: what the model was looking at: its last words, or the last error
    context: str = ""
    #: the calls of the turn, last ones first cut: ``edit_file app.py: failed (No match …)``
    tried: tuple[str, ...] = ()


@dataclass(frozen=True)
class AutofixApplied(Event):
    """The automatic fixers (``ruff check --fix``, ``ruff format`` …) changed files after a failed verification,
    before the failures went back to the model."""

    type: ClassVar[str] = "autofix"
    commands: tuple[str, ...]
    files: tuple[str, ...]
    diff: str

"""The events of a workflow's job (see :mod:`anvil.core.workflows`): its phases, a refused transition, its end.

Events like the others of :mod:`anvil.core.events` (the same base, the same JSON form), kept apart because only
workflows make them.
"""

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

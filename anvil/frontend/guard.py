"""The front ends' handler boundary: a bug in showing one event or carrying out one command is one error line.

Both interactive front ends show a turn's events one by one through :func:`show_each`. When showing one
fails, the person sees one line (the traceback goes to the error log), the turn goes on with the next event,
and a request that could not be shown (an approval, a question, a plan) is answered with a refusal that
says why, so the turn never waits for an answer nobody can give. :func:`guarded` does the same for one piece
of work a front end runs (a slash command's effects, a model switch, session start-up).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from anvil.core.events import (
    ApprovalDecision,
    ApprovalRequested,
    Event,
    PlanDecision,
    PlanProposed,
    QuestionAsked,
)
from anvil.core.loop.failure import report

NOT_SHOWN = "anvil could not show this request to the person (an internal error)"


def refuse_request(event: Event) -> None:
    """Answer a request event that could not be shown, so the tool waiting on it goes on."""
    match event:
        case ApprovalRequested():
            event.answer(ApprovalDecision(False, f"Not run: {NOT_SHOWN}.", by="error"))
        case QuestionAsked():
            event.answer(f"({NOT_SHOWN}; decide yourself and say what you assumed.)")
        case PlanProposed():
            event.answer(PlanDecision(False, feedback=f"{NOT_SHOWN}; stay in plan mode and propose it again."))


async def show_each(events: AsyncIterator[Event], show: Callable[[Event], Awaitable[Any]],
                    tell: Callable[[str], Any], data_dir: Path | None) -> None:
    """``show`` every event; one that fails to show is told through ``tell`` and never stops the turn."""
    async for event in events:
        try:
            await show(event)
        except Exception as exc:  # the handler boundary: the turn goes on without this event on screen
            tell(report(data_dir, f"Showing a {event.type} event", exc))
            refuse_request(event)


async def guarded(work: Awaitable[Any], what: str, tell: Callable[[str], Any], data_dir: Path | None) -> Any:
    """Await ``work``; a failure is told through ``tell`` in one line instead of reaching the UI library."""
    try:
        return await work
    except Exception as exc:  # the handler boundary
        tell(report(data_dir, what, exc))
        return None

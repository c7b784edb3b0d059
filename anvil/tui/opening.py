"""What the app shows as a session opens: a resumed session's history, its last known context usage and where
it stands; a new session's welcome line (anvil/frontend/welcome.py), so the app never opens on a blank screen."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from anvil.frontend.commands import resumed_text
from anvil.frontend.welcome import welcome_text

if TYPE_CHECKING:
    from anvil.facade import SessionFacade
    from anvil.tui.status import StatusBar
    from anvil.tui.transcript import LineEntry, Transcript


class OpeningHost(Protocol):
    @property
    def transcript(self) -> Transcript: ...

    @property
    def status(self) -> StatusBar: ...

    def add_line(self, kind: str, text: str) -> LineEntry: ...


def show_opening(app: OpeningHost, session: SessionFacade) -> None:
    """The session's first entries: its history and size when resumed, else the welcome line; its warnings."""
    resumed = resumed_text(session)
    if resumed is not None and session.resumed_messages is not None:
        from anvil.tui.history import show_history

        show_history(app.transcript, session.resumed_messages)
        app.add_line("notice", resumed)
        app.status.update_state(used=session.usage().context_used, estimated=True)
    elif not app.transcript.children:  # a new session opens on what a newcomer needs, not a blank screen
        settings = session.settings
        app.add_line("notice", welcome_text(settings.model, settings.api_base))
    for warning in session.warnings:
        app.add_line("notice", warning)


async def restore_gauge(app: OpeningHost, session: SessionFacade) -> None:
    """A resumed session's gauge as it was left (estimated until the next call), once the model's window is
    known (after the warm-up loaded what the model needs)."""
    if session.resumed_messages is None:
        return
    try:
        gauge = await asyncio.to_thread(session.context_event)
    except Exception:  # the model's facts could not be had: the gauge waits for the first call, as before
        return
    app.status.update_state(used=gauge.used, window=gauge.window, estimated=True)

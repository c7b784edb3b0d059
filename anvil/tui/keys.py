"""Ctrl+C in the app, as anvil/frontend/keys.py decides it for both interactive front ends: interrupt a running
turn when nothing is typed, else clear the input; twice within a second on an idle prompt quits. With an
approval open, the interrupt answers it (nothing runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from textual.screen import ModalScreen, Screen

from anvil.frontend.keys import CTRL_C_TEXT, QUIT_WINDOW, CtrlC

if TYPE_CHECKING:
    from anvil.facade import SessionFacade
    from anvil.tui.prompt_input import PromptInput


class CtrlCHost(Protocol):
    """What Ctrl+C needs of the app."""

    busy: bool
    ctrl_c: CtrlC
    session: SessionFacade | None

    @property
    def screen(self) -> Screen[Any]: ...

    @property
    def prompt(self) -> PromptInput: ...

    def action_exit_app(self) -> None: ...

    def action_interrupt(self) -> None: ...

    def notify(self, message: str, *, timeout: float | None = None) -> None: ...


def ctrl_c(app: CtrlCHost) -> None:
    modal = isinstance(app.screen, ModalScreen)
    typed = bool(app.prompt.text) and not modal
    action = app.ctrl_c.press(busy=app.busy and app.session is not None, has_input=typed)
    if action == "quit":
        app.action_exit_app()
        return
    if action == "interrupt":
        app.action_interrupt()
        interrupted = getattr(app.screen, "interrupted", None)
        if modal and interrupted is not None:
            interrupted()  # an approval waiting on the person is answered by the interrupt
    elif action == "clear":
        app.prompt.load_text("")
    app.notify(CTRL_C_TEXT[action], timeout=QUIT_WINDOW + 1)

"""The trust question (anvil.frontend.trust) as a modal, before the session starts: ``t`` trusts the folder,
``n`` or Esc does not, this time. ``t`` works only after :attr:`TrustScreen.ARM_DELAY`, so a key typed into
the prompt just as the dialog opens cannot trust a folder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from anvil.frontend.trust import TrustQuestion, decide, trust_question
from anvil.tui.questions import DIALOG_CSS

if TYPE_CHECKING:
    from anvil.config import Settings
    from anvil.trust import ProjectTrust


async def ask_then_load(app: App[Any], check: ProjectTrust, load: Callable[[bool | None], Settings]) -> Settings:
    """Ask (from the start-up worker), remember a yes, then ``load(trust)`` the settings in a thread."""
    trusted = bool(await app.push_screen_wait(TrustScreen(trust_question(check))))
    trust = await asyncio.to_thread(decide, check, trusted)
    return await asyncio.to_thread(load, trust)


class TrustScreen(ModalScreen[bool]):
    DEFAULT_CSS = f"TrustScreen {{{DIALOG_CSS} .item {{ padding-left: 2; color: $text-warning; }} }}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "answer(True)", "Trust"),
        Binding("n", "answer(False)", "Not this time"),
        Binding("escape", "answer(False)", "Not this time"),
    ]
    ARM_DELAY: ClassVar[float] = 0.3

    def __init__(self, question: TrustQuestion) -> None:
        super().__init__()
        self.question = question
        self._armed = self.ARM_DELAY <= 0

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = self.question.title
            with VerticalScroll(id="body"):
                yield Static(self.question.intro, markup=False)
                for item in self.question.items:
                    yield Static(f"• {item}", classes="item", markup=False)
                yield Static(self.question.advice, classes="hint", markup=False)
            yield Static(self.question.hint + " (or Esc)", classes="hint", markup=False)

    def on_mount(self) -> None:
        if not self._armed:
            self.set_timer(self.ARM_DELAY, self._arm)

    def _arm(self) -> None:
        self._armed = True

    def action_answer(self, trusted: bool) -> None:
        if trusted and not self._armed:
            return
        self.dismiss(trusted)

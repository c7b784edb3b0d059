"""A yes/no question from a slash command (/undo: "Undo turn 3, restoring app.py?"): ``y`` yes; ``n`` or Esc no."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from anvil.tui.questions import DIALOG_CSS


class ConfirmScreen(ModalScreen[bool]):
    DEFAULT_CSS = f"ConfirmScreen {{{DIALOG_CSS}}}"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = "Are you sure?"
            yield Static(self.question, id="question", markup=False)
            yield Static("y yes · n or Esc no", classes="hint")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

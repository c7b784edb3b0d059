"""A workflow job's phases in the app: the divider the transcript shows where a phase begins.

The words come from :mod:`anvil.frontend.lines`, like every other front end's; the divider is a rule across the
transcript with the phase in it (``── phase 2 · tactical ──``) and what the transition did below it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from anvil.tui.entry import Entry


class PhaseDivider(Entry):
    """Where a phase begins: its label in the rule, the transition's line under it."""

    DEFAULT_CLASSES = "entry phase-divider"

    def __init__(self, label: str, text: str) -> None:
        super().__init__()
        self.label = label
        self.text = text
        self.border_title = f" {label} "

    def compose(self) -> ComposeResult:
        yield Static(self.text, markup=False)

    @property
    def plain_text(self) -> str:
        return f"{self.label}: {self.text}"

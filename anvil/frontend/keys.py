"""What Ctrl+C does, decided once for both interactive front ends (the TUI and ``--plain``).

People coming from other assistants expect Ctrl+C to stop the running turn first: with a turn running and
nothing typed, Ctrl+C interrupts it; with something typed it clears the input (the turn, if any, goes on);
on an idle, empty prompt it says how to quit, and a second press within :data:`QUIT_WINDOW` seconds quits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

#: seconds within which a second Ctrl+C on an idle, empty prompt quits
QUIT_WINDOW = 1.0
CtrlCAction = Literal["interrupt", "clear", "quit", "warn"]
#: what each action tells the person (the TUI as a toast, --plain in its toolbar)
CTRL_C_TEXT: dict[CtrlCAction, str] = {
    "interrupt": "Interrupting the turn…",
    "clear": "Input cleared.",
    "warn": "Press Ctrl+C again to quit.",
    "quit": "",
}


class CtrlC:
    """Remembers the last press that could be the first of a quitting pair."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._armed_at: float | None = None

    def press(self, *, busy: bool, has_input: bool) -> CtrlCAction:
        """What this press does: ``busy`` a turn (or a compaction) is running; ``has_input`` text is typed."""
        now = self._clock()
        armed, self._armed_at = self._armed_at, None
        if has_input:
            return "clear"
        if busy:
            return "interrupt"
        if armed is not None and now - armed <= QUIT_WINDOW:
            return "quit"
        self._armed_at = now
        return "warn"

"""Telling the person, once, that something anvil records could not be written, and when it works again.

A full disk under the data directory must not end a turn: the session file and the checkpoints keep what
they could not write in memory and try again on the next write. The person hears about it once when writing
starts failing and once when it works again, not on every record. The messages wait here until the agent
loop (on its own thread) turns them into notices in the turn's events, so writers in worker threads never
call into a front end.
"""

from __future__ import annotations

import threading


class WriteTrouble:
    """The state of one writer (the session file, the checkpoints): failing or not, and what is left to say."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failing = False
        self._untold: list[str] = []
        self._lock = threading.Lock()

    def failed(self, exc: OSError, where: object) -> None:
        """A write failed; said once per outage."""
        if self.failing:
            return
        self.failing = True
        reason = exc.strerror or str(exc)
        self._say(f"Could not write {self.what} ({reason}, {where}). anvil goes on and keeps what it could not "
                  "write in memory; it is written as soon as there is room again.")

    def recovered(self, count: int, *, held: str = "") -> None:
        """Writing works again after a failure; ``count`` records held in memory were written now (``held`` says
        it in other words, for a writer whose records are not counted)."""
        if not self.failing:
            return
        self.failing = False
        held = f" ({held})" if held else f" ({count} held in memory are saved now)" if count else ""
        self._say(f"Writing {self.what} works again{held}.")

    def lost(self, message: str) -> None:
        """What could not be written in the end (the session closed while the disk was still full)."""
        self._say(message)

    def _say(self, message: str) -> None:
        with self._lock:
            self._untold.append(message)

    def take(self) -> list[str]:
        """The messages not yet told to the person (each is told once)."""
        with self._lock:
            taken, self._untold = self._untold, []
        return taken

"""How the app ends: /exit, Ctrl+C twice, Ctrl+Q, and SIGTERM or SIGHUP (a closed terminal) within 2 seconds.

Every way out closes the session the same way (the running turn interrupted; hooks, MCP servers and commands
ended; the session file closed). A signal is heard by a thread of its own (:mod:`anvil.frontend.signal_exit`), which
also ends the process itself should that close not be done in time; the terminal driver is one that a hung-up
terminal cannot block (:mod:`anvil.tui.terminal_driver`).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import TYPE_CHECKING

from textual.app import App

from anvil.frontend.signal_exit import SignalExit, exit_code, flush_and_end
from anvil.frontend.welcome import farewell_text

if TYPE_CHECKING:
    from textual.driver import Driver

    from anvil.facade import SessionFacade


#: seconds the way out waits for an interrupted turn to end, so that the session has its end
TURN_END_WAIT = 1.0


class Exiting(App[int]):
    """The app's ways out (a base of :class:`~anvil.tui.app.AnvilApp`)."""

    session: SessionFacade | None
    busy: bool
    farewell: str | None
    _exiting = False
    #: watches SIGTERM and SIGHUP while the app runs (None before it runs, or where signals cannot be watched)
    signal_exit: SignalExit | None = None

    def get_driver_class(self) -> type[Driver]:
        driver = super().get_driver_class()
        if sys.platform != "win32" and driver.__name__ == "LinuxDriver":
            from anvil.tui.terminal_driver import AnvilDriver

            return AnvilDriver
        return driver

    def watch_signals(self) -> None:
        """From on_mount (the main thread, the loop running). Not without a terminal (tests run the app so)."""
        if self.is_headless:
            return
        watcher = SignalExit(self._exit_on_signal, self._close_now, asyncio.get_running_loop().call_soon_threadsafe,
                             lambda: getattr(self._driver, "attrs_before", None))
        self.signal_exit = watcher if watcher.install() else None

    @property
    def exit_signal(self) -> int | None:
        """The signal that ended the app (SIGTERM, SIGHUP), or None."""
        return self.signal_exit.signum if self.signal_exit is not None else None

    def _exit_on_signal(self, signum: int) -> None:
        self.action_exit_app()

    def _close_now(self) -> None:
        """The orderly close ran out of time: what must not be lost or left running (on the watching thread)."""
        if self.session is not None:
            self.session.close_now()

    def action_exit_app(self) -> None:
        if self._exiting:
            return
        self._exiting = True
        if self.busy and self.session is not None:
            self.session.interrupt()
            # A request on screen (an approval, a question, a plan) holds the turn until it is answered: answered
            # "interrupted", the turn ends now, and the session says how.
            answer = getattr(self.screen, "answer_interrupted", None)
            if callable(answer):
                answer()
        self.run_worker(self._close_and_exit(), group="exit")

    async def _close_and_exit(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TURN_END_WAIT
        while self.busy and loop.time() < deadline:  # the interrupted turn records how it ended (its calls' results)
            await asyncio.sleep(0.02)
        if self.session is not None:
            self.farewell = farewell_text(self.session.id, self.session.turns)
            with contextlib.suppress(Exception):  # hooks, MCP servers, background commands; nothing may block
                await asyncio.wait_for(self.session.close(), timeout=5)
            with contextlib.suppress(Exception):
                self.session.runtime.session.close()
        self.exit(0)  # after a signal, the CLI ends the process with the signal's own code

    def on_unmount(self) -> None:
        self.stop_watching_signals()

    def stop_watching_signals(self) -> None:
        """After the app has ended by itself (not by a signal): signals are as they were."""
        if self.signal_exit is not None and self.signal_exit.signum is None:
            self.signal_exit.uninstall()


def end_after_signal(app: Exiting, signum: int) -> None:
    """The app has closed after SIGTERM or SIGHUP: end the process now, with 128 + the signal's number (Python's
    own finalisation takes over a second with litellm and Textual loaded); the watching thread stands down."""
    watcher = app.signal_exit
    if watcher is not None:
        watcher.finished.set()
    flush_and_end(exit_code(signum))

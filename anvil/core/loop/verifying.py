"""The agent's verification steps: running the project's checks (``verify``) and saying where they ended.

A mixin of :class:`~anvil.core.loop.agent.Agent`, which owns the state named below; ``_after_reply`` decides
when the checks run and sends failures back to the model (:mod:`anvil.core.loop.verify` has the checks).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from anvil.core.events import Event, Notice
from anvil.core.loop.history import History
from anvil.core.loop.interrupt import Interrupted, Interrupter
from anvil.core.loop.turn import TurnState
from anvil.core.loop.verify import report, run_checks
from anvil.core.tools.base import ToolContext


class Verifying:
    verify: list[str]
    verify_timeout: float
    ctx: ToolContext
    history: History
    _interrupt: Interrupter

    async def _final_check(self, turn: TurnState) -> AsyncIterator[Event]:
        """When checks ran this turn, say where they ended (checking again if files changed since)."""
        if turn.reason != "done" or turn.fix_until is None:
            return
        edited = turn.changed
        if edited:  # edits after the last check: check again so the report is about the end state
            async for event in self._verify(turn):
                yield self.history.record(event)
        if turn.checks is None:
            turn.reason = "interrupted"
            return
        turn.message = report(turn.checks, changed=edited)
        yield self.history.record(Notice(turn.message))

    async def _verify(self, turn: TurnState) -> AsyncIterator[Event]:
        """Run the configured checks into ``turn.checks`` (None when interrupted), saying so first."""
        yield Notice("Verifying the changes: " + ", ".join(f"`{command}`" for command in self.verify))
        turn.changed = False
        try:
            turn.checks = await self._interrupt.until(run_checks(self.verify, self.ctx.root, self.verify_timeout,
                                                                    self.ctx.sandbox))
        except Interrupted:
            turn.checks = None

"""The agent's compaction steps, apart from the turn's: ``/compact`` between turns, and one compaction (tier 1
stubs or a tier-2 snapshot) when the context passes the threshold or the provider says it overflowed.

A mixin of :class:`~anvil.core.loop.agent.Agent`, which owns the state named below. The compacted history
replaces the old one in memory and is recorded in the session (earlier records stay, for audit). An assistant
message is never split from its thinking: the provider state travels inside the message, and tier 2 keeps or
summarises whole messages.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from anvil.core.context.compaction import Compactor
from anvil.core.context.meter import ContextMeter
from anvil.core.events import CompactionFinished, CompactionStarted, Event, Notice, UsageReport
from anvil.core.hooks.runner import HookRunner
from anvil.core.loop.history import History
from anvil.core.loop.interrupt import Interrupted, Interrupter
from anvil.core.loop.usage import UsageTotals
from anvil.core.model.protocol import Model
from anvil.core.session.store import Session
from anvil.core.tools.base import ToolContext, ToolRegistry
from anvil.core.tools.todos import render_todos


class Compacting:
    model: Model
    tools: ToolRegistry
    offered: ToolRegistry
    ctx: ToolContext
    session: Session | None
    messages: list[dict[str, Any]]
    history: History
    usage: UsageTotals
    context: ContextMeter
    compactor: Compactor
    hooks: HookRunner | None
    _interrupt: Interrupter
    _spent: list[UsageReport]
    _refresh_workflow_layer: Callable[[], None]

    async def compact(self, focus: str | None = None) -> AsyncIterator[Event]:
        """Compact the history now (``/compact [focus]``), between turns; always writes a snapshot."""
        self._interrupt.clear()
        with contextlib.suppress(Interrupted):
            async for event in self._compaction("manual", focus=focus, force=True):
                yield self.history.record(event)
        if self.session is not None:
            self.session.sync()

    async def _compaction(self, reason: str, *, focus: str | None = None, force: bool = False) -> AsyncIterator[Event]:
        """One compaction, as events (not yet recorded); the session gets the compacted history."""
        before = self.context.measure(self.messages, self.offered.schemas())
        if self.hooks is not None:
            for notice in (await self.hooks.pre_compact("manual" if reason == "manual" else "auto", focus)).notices:
                yield Notice(notice)
        yield CompactionStarted(before, reason)
        self._spent.clear()
        try:
            outcome = await self.compactor.compact(self.messages, todos=render_todos(self.ctx.todos), focus=focus,
                                                   force_summary=force, written=self.tools.written_paths)
        except Interrupted:
            yield CompactionFinished(before, before, 0, False, "Interrupted: the history was left as it was.")
            raise
        for usage in self._spent:  # summary calls cost tokens too: the totals and the person see them
            yield usage
        if outcome.tier:
            self.messages[:] = outcome.messages
            self._refresh_workflow_layer()  # an attached workflow's layer as it is now (its memory file may have grown)
            self.context.reset()
            if self.session is not None:  # earlier records stay: the file keeps the full history for audit
                self.session.append({"t": "compaction", "messages": self.messages[1:], "tier": outcome.tier})
        after = self.context.measure(self.messages, self.offered.schemas())
        text = outcome.message
        yield CompactionFinished(before, after, outcome.tier, outcome.ok, text[:1].upper() + text[1:])
        yield self.context.event()
        stopped = self.compactor.record(outcome)
        if stopped:
            yield Notice(stopped)

    async def _summarise(self, request: list[dict[str, Any]]) -> str:
        """The compactor's model call: same model, no tools, interruptible; its text is not shown."""
        completion = await self._interrupt.complete(self.model, request)
        self._spent.append(self.usage.add(completion))
        return completion.text

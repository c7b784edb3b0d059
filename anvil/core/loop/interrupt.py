"""Interrupts: the person's "stop" reaching whatever the loop is waiting on (a stream, a tool, an approval).

Every wait in the loop goes through :meth:`Interrupter.until`, which races the awaited work against the
interrupt flag and cancels the work when the flag wins; model streams are pumped through a queue for the
same reason, so a stop lands between two chunks rather than at the end of the reply. Text deltas that queued
up while the loop's reader was busy (a front end drawing) go on as one: a fast stream (2,000 small chunks a
second) then costs the front ends one event per look instead of one per chunk, and nothing waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

from anvil.core.model.errors import ModelError
from anvil.core.model.protocol import Completion, Model

T = TypeVar("T")
#: what the model reads (and the person sees) for a call or a request the person interrupted
INTERRUPTED = "Interrupted by the user."


class Interrupted(Exception):
    """Raised inside the loop when the person interrupted; never escapes the agent."""


class Interrupter:
    def __init__(self) -> None:
        self._event = asyncio.Event()

    def set(self) -> None:
        self._event.set()

    def clear(self) -> None:
        self._event.clear()

    def is_set(self) -> bool:
        return self._event.is_set()

    async def until(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` unless the person interrupts first (then cancel it and raise)."""
        work = asyncio.ensure_future(awaitable)
        if self._event.is_set():
            work.cancel()
            raise Interrupted
        stop = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({work, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if work.done():
            return work.result()
        work.cancel()
        with contextlib.suppress(BaseException):
            await work
        raise Interrupted

    async def complete(self, model: Model, messages: list[dict[str, Any]]) -> Completion:
        """One model call offering no tools, to its completion (the compactor's summaries: not shown)."""
        async for item in self.stream(model, messages, []):
            match item:
                case Completion():
                    return item
        raise ModelError("The summary call ended without a reply.", kind="compaction")

    async def stream(self, model: Model, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     **options: Any) -> AsyncIterator[Any]:
        """Model items via a queue fed by a task, so an interrupt can cancel the stream at any point;
        ``options`` go to the model's ``stream`` (``max_output_tokens``)."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        done = object()

        async def pump() -> None:
            try:
                async for item in model.stream(messages, tools, **options):
                    queue.put_nowait(item)
            except Exception as exc:
                queue.put_nowait(exc)
            finally:
                queue.put_nowait(done)

        task = asyncio.create_task(pump())
        ready: deque[Any] = deque()
        try:
            while True:
                if not ready:
                    ready.append(await self.until(queue.get()))
                    while not queue.empty():
                        ready.append(queue.get_nowait())
                elif self.is_set():  # a stop lands before the next item, taken already or not
                    raise Interrupted
                item = ready.popleft()
                if isinstance(item, str) and ready and isinstance(ready[0], str):
                    item = _joined_text(item, ready)
                if item is done:
                    return
                if isinstance(item, ModelError):
                    raise item
                if isinstance(item, Exception):
                    raise ModelError(f"The model call failed unexpectedly: {item!r}") from item
                yield item
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task


def _joined_text(first: str, ready: deque[Any]) -> str:
    """``first`` and the text deltas right behind it in ``ready`` (taken out of it), as one."""
    pieces = [first]
    while ready and isinstance(ready[0], str):
        pieces.append(ready.popleft())
    return "".join(pieces)

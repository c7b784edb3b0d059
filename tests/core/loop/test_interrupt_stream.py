"""The interrupter's stream: text deltas that queue up behind a busy reader go on as one; stops still land."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from anvil.core.events import ReasoningDelta
from anvil.core.loop.interrupt import Interrupted, Interrupter
from anvil.core.model.protocol import Completion

PIECES = [f"w{i} " for i in range(300)]


class BurstModel:
    """Yields its items as fast as the loop lets it: a 2,000-events-a-second provider, compressed."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    async def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     **options: Any) -> AsyncIterator[Any]:
        for item in self.items:
            await asyncio.sleep(0)
            yield item


async def test_deltas_behind_a_busy_reader_arrive_joined_in_order() -> None:
    reasoning = ReasoningDelta("thinking")
    model = BurstModel([*PIECES[:150], reasoning, *PIECES[150:], Completion("".join(PIECES))])
    received: list[Any] = []
    async for item in Interrupter().stream(model, [], []):  # type: ignore[arg-type]
        received.append(item)
        await asyncio.sleep(0.002)  # a front end drawing
    texts = [item for item in received if isinstance(item, str)]
    assert "".join(texts) == "".join(PIECES)
    assert len(texts) < len(PIECES) / 5  # joined, not one event per piece
    at = received.index(reasoning)  # nothing is joined across a non-text item
    assert "".join(t for t in received[:at] if isinstance(t, str)) == "".join(PIECES[:150])
    assert isinstance(received[-1], Completion)


async def test_a_stop_lands_before_the_next_item_even_if_it_arrived_already() -> None:
    model = BurstModel([ReasoningDelta("a"), ReasoningDelta("b"), ReasoningDelta("c"), Completion("x")])
    interrupter = Interrupter()
    received: list[Any] = []
    with pytest.raises(Interrupted):
        async for item in interrupter.stream(model, [], []):  # type: ignore[arg-type]
            received.append(item)
            await asyncio.sleep(0.01)  # the rest is queued by now
            interrupter.set()
    assert received == [ReasoningDelta("a")]

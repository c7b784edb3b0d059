"""A session facade over a real runtime with a scripted model, for the shared front-end layer's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.config import Settings
from anvil.core.events import Event
from anvil.core.model.scripted import ScriptedModel
from anvil.facade import SessionFacade
from anvil.runtime import open_runtime

MakeSession = Callable[..., SessionFacade]


@pytest.fixture
async def make_session(project: Path) -> AsyncIterator[MakeSession]:
    opened: list[SessionFacade] = []

    def make(turns: list[dict[str, Any]] | None = None, **settings: Any) -> SessionFacade:
        runtime = open_runtime(Settings(model="scripted", **settings), project, model=ScriptedModel(turns or []))
        session = SessionFacade(runtime)
        opened.append(session)
        return session

    yield make
    for session in opened:
        await session.close()


async def events_of(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]

"""Helpers for the app's tests: a real runtime around a ScriptedModel, and a way to wait on the app."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from anvil.config import Settings
from anvil.core.model.scripted import ScriptedModel
from anvil.core.policy.approval import ApprovalPolicy
from anvil.runtime import Runtime, open_runtime
from anvil.tui.app import AnvilApp


def make_runtime(root: Path, turns: list[dict[str, Any]], *, policy: ApprovalPolicy | None = None,
                 window: int = 200_000, **settings: Any) -> Runtime:
    model = ScriptedModel(turns, window=window)
    runtime = open_runtime(Settings(model="scripted", **settings), root, model=model)
    if policy is not None:  # the agent hands its policy to the part that runs tool calls: replace it in both
        runtime.agent.policy = policy
        caller = getattr(runtime.agent, "caller", None)
        if caller is not None:
            caller.policy = policy
    return runtime


def make_app(root: Path, turns: list[dict[str, Any]], **kwargs: Any) -> AnvilApp:
    return AnvilApp(root, runtime=make_runtime(root, turns, **kwargs))


async def wait_for(pilot: Pilot[Any], condition: Callable[[], object], timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` is true; fail with a clear message on timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.02)


def screen_text(app: AnvilApp) -> str:
    """What the terminal would show now, as text: the screen composed the way Textual draws it."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def submit(pilot: Pilot[Any], text: str) -> None:
    app = pilot.app
    assert isinstance(app, AnvilApp)
    app.prompt.load_text(text)
    await pilot.press("enter")


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    """The app freezes the heap and raises the collector's thresholds after its warm-up (warmup.settle_heap):
    right for one process per session, but the test process runs hundreds of apps, and frozen objects are
    never collected. Undo it after each test."""
    import gc

    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.fixture(autouse=True)
def approvals_armed_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The modal ignores y/a for a moment after opening (against typed-ahead keys); tests press at once."""
    from anvil.tui.approval import ApprovalScreen

    monkeypatch.setattr(ApprovalScreen, "ARM_DELAY", 0)

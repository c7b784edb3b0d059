"""A bug in one of the app's handlers is one error line; the turn and the app go on (anvil/frontend/guard.py).
tests/plain/test_handler_errors.py is the plain REPL's twin of this file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.core.model.scripted import ScriptedModel
from anvil.core.session.store import read_session
from anvil.tui.approval import ApprovalScreen
from anvil.tui.confirm import ConfirmScreen
from anvil.tui.render import TurnRenderer
from tests.support.frontend_scripts import TOUCH, WRITE
from tests.tui.conftest import make_app, submit, wait_for
from tests.tui.test_shared_behaviour import SIZE, lines


async def broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected into a front-end handler")


async def test_an_event_that_fails_to_show_is_one_line_and_the_turn_goes_on(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TurnRenderer, "_tool_started", broken)
    app = make_app(project, TOUCH)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make the file")
        await wait_for(pilot, lambda: isinstance(app.screen, ApprovalScreen))  # the turn went on to the approval
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy)
        assert (project / "made.txt").exists()
        errors = lines(app, "error")
        assert len(errors) == 1 and errors[0].startswith(
            "Showing a tool_call_started event failed: RuntimeError: injected into a front-end handler (details in ")
        assert app.runtime is not None
        assert read_session(app.runtime.session.path).turns == 1


async def test_an_approval_that_fails_to_show_is_refused_and_the_model_told(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TurnRenderer, "ask", broken)
    app = make_app(project, TOUCH)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "make the file")
        await wait_for(pilot, lambda: not app.busy)  # it hung on an approval nobody could see before
        assert not (project / "made.txt").exists()
        assert lines(app, "error")[0].startswith("Showing a approval_requested event failed")
        model = app.runtime.agent.model if app.runtime else None
        assert isinstance(model, ScriptedModel) and "could not show this request" in model.calls[1][-1]["content"]


async def test_a_command_whose_work_fails_in_a_worker_says_so(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(project, WRITE)
    async with app.run_test(size=SIZE) as pilot:
        await submit(pilot, "write a note")
        await wait_for(pilot, lambda: not app.busy and (project / "notes.txt").exists())
        monkeypatch.setattr("anvil.tui.commands.follow", broken)
        await submit(pilot, "/undo")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.press("y")
        await wait_for(pilot, lambda: lines(app, "error"))  # the worker failed silently before
        assert lines(app, "error") == [lines(app, "error")[0]]
        assert lines(app, "error")[0].startswith("The command failed: RuntimeError: injected")

"""A bug in one of the REPL's handlers is one error line; the turn and the REPL go on (anvil/frontend/guard.py).
tests/tui/test_handler_errors.py is the app's twin of this file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil.core.session.store import read_session
from tests.support.frontend_scripts import TOUCH


def broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected into a front-end handler")


async def test_an_event_that_fails_to_show_is_one_line_and_the_turn_goes_on(
        make_repl: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("anvil.plain.repl.tool_started", broken)
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("✗ Showing a tool_call_started event failed: RuntimeError: injected")
    await repl.send("y", then="ok")  # the approval that follows is shown, and the model's answer
    assert (project / "made.txt").exists()
    line = next(x for x in repl.screen().splitlines() if "Showing a tool_call_started" in x)
    assert "RuntimeError: injected into a front-end handler (details in " in line and "Traceback" not in repl.screen()
    assert await repl.exit() == 0
    assert read_session(repl.runtime.session.path).turns == 1


async def test_an_approval_that_fails_to_show_is_refused_and_the_model_told(
        make_repl: Any, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("anvil.plain.repl.approve", broken)
    repl = make_repl(TOUCH)
    await repl.prompt("make the file")
    await repl.wait("✗ Showing a approval_requested event failed")
    await repl.wait("ok")  # the turn did not hang on an approval nobody could see
    assert not (project / "made.txt").exists()
    assert "could not show this request" in repl.model.calls[1][-1]["content"]
    assert await repl.exit() == 0


async def test_a_command_whose_effect_fails_leaves_the_repl_up(make_repl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("anvil.plain.commands.todos_text", broken)
    repl = make_repl([{"text": "still here"}])
    await repl.prompt("/todos")
    await repl.wait("✗ That command failed: RuntimeError: injected")
    await repl.prompt("hello")  # the REPL died with a traceback before
    await repl.wait("still here")
    assert await repl.exit() == 0
